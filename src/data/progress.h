// Progress: a one-line "input bytes done of total, tokens, MB/s, ETA" display on stderr for long
// prepare runs, shown only when enabled (by default: when stderr is a terminal). Totals come from
// the input files' sizes; for gzip input they count compressed bytes, so the line says "approx".
#pragma once

#include <cstdint>
#include <string>

#include "core/timer.h"

namespace nanogpt {

class Progress {
 public:
  // approximate: the byte counts are compressed bytes (gzip input), so MB/s and ETA are estimates.
  Progress(std::string label, int64_t total_bytes, bool approximate, bool enabled);
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  ~Progress();  // ends the line if anything was shown

  // Absolute counts so far; redraws at most every 0.2 s. Called from one thread.
  void update(int64_t bytes_done, int64_t tokens_done);
  void finish();
  static bool stderr_is_terminal();

  // The text of the line (without '\r'), e.g.
  // "prepare: 120.5 / 500.0 MB  3.1 M tokens  60.2 MB/s  ETA 6 s".
  static std::string format_line(const std::string& label, int64_t bytes_done, int64_t total_bytes,
                                 int64_t tokens_done, double seconds, bool approximate);

 private:
  void draw();
  std::string label_;
  int64_t total_;
  bool approximate_;
  bool enabled_;
  bool shown_ = false;
  int64_t bytes_ = 0;
  int64_t tokens_ = 0;
  Timer timer_;
  double last_draw_ = -1.0;
};

}  // namespace nanogpt
