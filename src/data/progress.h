// Progress: a one-line "bytes done, MB/s, ETA" display on stderr for long prepare runs, shown only
// when stderr is a terminal. add() may be called from several threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "core/timer.h"

namespace nanogpt {

class Progress {
 public:
  // enabled = false silences it; by default on iff stderr is a terminal.
  Progress(std::string label, int64_t total_bytes, bool enabled);
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  ~Progress();  // ends the line if anything was shown

  void add(int64_t bytes);  // thread-safe; redraws at most every 0.2 s
  void finish();
  static bool stderr_is_terminal();

 private:
  void draw(int64_t done);
  std::string label_;
  int64_t total_;
  bool enabled_;
  bool shown_ = false;
  std::atomic<int64_t> done_{0};
  std::mutex mutex_;
  Timer timer_;
  double last_draw_ = -1.0;
};

}  // namespace nanogpt
