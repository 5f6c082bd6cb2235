// Progress line formatting and throttled drawing (stderr).
#include "data/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace nanogpt {

Progress::Progress(std::string label, int64_t total_bytes, bool approximate, bool enabled)
    : label_(std::move(label)), total_(total_bytes), approximate_(approximate), enabled_(enabled) {}

Progress::~Progress() { finish(); }

bool Progress::stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1; }

std::string Progress::format_line(const std::string& label, int64_t bytes_done, int64_t total_bytes,
                                  int64_t tokens_done, double seconds, bool approximate) {
  const double mb = static_cast<double>(bytes_done) / 1e6;
  const double rate = seconds > 0 ? mb / seconds : 0.0;
  std::string eta = "ETA ?";
  if (rate > 0) {
    const double left = std::max(0.0, static_cast<double>(total_bytes - bytes_done) / 1e6 / rate);
    eta = left >= 3600
              ? fmt::format("ETA {:.0f} h {:02.0f} min", left / 3600, std::fmod(left, 3600) / 60)
          : left >= 60
              ? fmt::format("ETA {:.0f} min {:02.0f} s", std::floor(left / 60), std::fmod(left, 60))
              : fmt::format("ETA {:.0f} s", left);
  }
  return fmt::format("{}: {:.1f} / {:.1f} MB{}  {:.1f} M tokens  {:.1f} MB/s  {}", label, mb,
                     static_cast<double>(total_bytes) / 1e6,
                     approximate ? " (compressed, approx.)" : "",
                     static_cast<double>(tokens_done) / 1e6, rate, eta);
}

void Progress::update(int64_t bytes_done, int64_t tokens_done) {
  bytes_ = bytes_done;
  tokens_ = tokens_done;
  if (!enabled_) return;
  const double now = timer_.seconds();
  if (now - last_draw_ < 0.2) return;
  last_draw_ = now;
  draw();
}

void Progress::draw() {
  const std::string line =
      format_line(label_, bytes_, total_, tokens_, timer_.seconds(), approximate_);
  std::fprintf(stderr, "\r%s   ", line.c_str());
  std::fflush(stderr);
  shown_ = true;
}

void Progress::finish() {
  if (!enabled_) return;
  if (shown_) {
    draw();
    std::fprintf(stderr, "\n");
  }
  shown_ = false;
  enabled_ = false;
}

}  // namespace nanogpt
