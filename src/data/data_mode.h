// data_mode 'auto': whether a loader reads its token files into RAM (preload: the fastest random
// reads) or maps them (mmap: the OS pages them in and out, so corpora larger than memory train in
// bounded RSS). Preload when the files are small against the memory available, mmap otherwise.
#pragma once

#include <cstdint>
#include <string>

#include "data/token_file.h"

namespace nanogpt {

// auto preloads at most this many bytes of token files (and at most a quarter of the memory
// available): beyond it the page cache serves mmap's reads nearly as fast, without the RSS.
inline constexpr int64_t kAutoPreloadMaxBytes = int64_t{1} << 30;

struct DataModeChoice {
  DataMode mode = DataMode::kPreload;
  std::string why;  // for the log: "preload (auto: 2.1 MB of token files)", "mmap (as set)", ...
};

// `value` is data_mode's value: 'auto', 'preload' or 'mmap' (else a named error); file_bytes the
// loader's token files together; available_bytes the memory available (memory_available_bytes).
DataModeChoice resolve_data_mode(const std::string& value, int64_t file_bytes,
                                 int64_t available_bytes);

// MemAvailable of /proc/meminfo in bytes (0 where it cannot be read: auto then maps).
int64_t memory_available_bytes();

}  // namespace nanogpt
