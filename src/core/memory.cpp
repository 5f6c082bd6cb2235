// Process memory figures from the OS.
#include "core/memory.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>

namespace nanogpt {

int64_t process_peak_rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
}

int64_t process_current_rss_bytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  long pages_total = 0, pages_resident = 0;
  int n = std::fscanf(f, "%ld %ld", &pages_total, &pages_resident);
  std::fclose(f);
  if (n != 2) return 0;
  return static_cast<int64_t>(pages_resident) * sysconf(_SC_PAGESIZE);
}

}  // namespace nanogpt
