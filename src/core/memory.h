// MemoryTracker: counts the bytes our owning buffers hold now and at their peak, so the trainer can
// report "peak memory" the way the seeds measure it (torch.cuda.max_memory_reserved). Also the
// process's peak RSS from the OS.
#pragma once

#include <atomic>
#include <cstdint>

namespace nanogpt {

class MemoryTracker {
 public:
  void add(int64_t bytes) {
    int64_t now = current_.fetch_add(bytes) + bytes;
    int64_t peak = peak_.load();
    while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
    }
  }
  void sub(int64_t bytes) { current_.fetch_sub(bytes); }
  int64_t current_bytes() const { return current_.load(); }
  int64_t peak_bytes() const { return peak_.load(); }
  void reset_peak() { peak_.store(current_.load()); }

 private:
  std::atomic<int64_t> current_{0};
  std::atomic<int64_t> peak_{0};
};

// Peak resident set size of this process in bytes (getrusage ru_maxrss).
int64_t process_peak_rss_bytes();
// Current resident set size in bytes (/proc/self/statm), 0 if unknown.
int64_t process_current_rss_bytes();

}  // namespace nanogpt
