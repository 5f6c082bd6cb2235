// Progress line drawing (throttled, terminal only).
#include "data/progress.h"

#include <unistd.h>

#include <cstdio>

namespace nanogpt {

Progress::Progress(std::string label, int64_t total_bytes, bool enabled)
    : label_(std::move(label)), total_(total_bytes), enabled_(enabled) {}

Progress::~Progress() { finish(); }

bool Progress::stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1; }

void Progress::add(int64_t bytes) {
  const int64_t done = done_.fetch_add(bytes) + bytes;
  if (!enabled_) return;
  std::unique_lock lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return;
  const double now = timer_.seconds();
  if (now - last_draw_ < 0.2 && done < total_) return;
  last_draw_ = now;
  draw(done);
}

void Progress::draw(int64_t done) {
  const double secs = timer_.seconds();
  const double mb = static_cast<double>(done) / 1e6;
  const double rate = secs > 0 ? mb / secs : 0.0;
  const double left = rate > 0 ? static_cast<double>(total_ - done) / 1e6 / rate : 0.0;
  std::fprintf(stderr, "\r%s: %.1f / %.1f MB  %.1f MB/s  ETA %.0f s   ", label_.c_str(), mb,
               static_cast<double>(total_) / 1e6, rate, left);
  std::fflush(stderr);
  shown_ = true;
}

void Progress::finish() {
  if (!enabled_) return;
  std::lock_guard lock(mutex_);
  if (shown_) {
    draw(done_.load());
    std::fprintf(stderr, "\n");
  }
  shown_ = false;
  enabled_ = false;
}

}  // namespace nanogpt
