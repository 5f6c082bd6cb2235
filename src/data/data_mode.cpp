// data_mode 'auto' resolved against the token files' size and the memory available.
#include "data/data_mode.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "core/byte_size.h"

namespace nanogpt {

DataModeChoice resolve_data_mode(const std::string& value, int64_t file_bytes,
                                 int64_t available_bytes) {
  if (value != "auto") {
    const DataMode mode = parse_data_mode(value);  // throws naming the key for a bad value
    return {mode, fmt::format("{} (as set)", value)};
  }
  const std::string size = format_byte_size(file_bytes);
  if (file_bytes > kAutoPreloadMaxBytes) {
    return {DataMode::kMmap, fmt::format("mmap (auto: {} of token files, over the {} that auto "
                                         "preloads)",
                                         size, format_byte_size(kAutoPreloadMaxBytes))};
  }
  if (file_bytes > available_bytes / 4) {
    return {DataMode::kMmap,
            fmt::format("mmap (auto: {} of token files, over a quarter of the {} of memory "
                        "available)",
                        size, format_byte_size(available_bytes))};
  }
  return {DataMode::kPreload, fmt::format("preload (auto: {} of token files)", size)};
}

int64_t memory_available_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    std::istringstream fields(line.substr(13));
    int64_t kib = 0;
    fields >> kib;
    return kib * 1024;
  }
  return 0;
}

}  // namespace nanogpt
