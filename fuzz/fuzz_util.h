// Helpers shared by the fuzz targets: a per-process scratch directory (for parsers that only take a
// path) and the convention that nanogpt::Error is the one expected way to reject an input.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "core/check.h"

namespace nanogpt::fuzz {

// The input as text.
inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// A directory of this process: $TMPDIR (scripts/fuzz.sh points it into build-fuzz), else /dev/shm
// or /tmp, plus "nanogpt_fuzz_<pid>". Created on first use.
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::filesystem::path base = tmp && *tmp                                 ? tmp
                                 : std::filesystem::is_directory("/dev/shm") ? "/dev/shm"
                                                                             : "/tmp";
    auto d = base / ("nanogpt_fuzz_" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

// Writes the bytes to scratch_dir()/name (replacing it) and returns the path.
inline std::string write_scratch_file(const std::string& name, std::string_view bytes) {
  const std::string path = (scratch_dir() / name).string();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) {
    std::fprintf(stderr, "fuzz: cannot write %s\n", path.c_str());
    std::abort();
  }
  return path;
}

// Runs f; a nanogpt::Error is an expected rejection (returns false), anything else propagates and
// is reported by libFuzzer as a crash ("uncaught exception").
template <typename F>
bool accepts(F&& f) {
  try {
    f();
    return true;
  } catch (const Error&) {
    return false;
  }
}

// Aborts with a message when an invariant of a successful parse does not hold.
#define FUZZ_ASSERT(cond, ...)                                                              \
  do {                                                                                      \
    if (!(cond)) {                                                                          \
      std::fprintf(stderr, "FUZZ_ASSERT failed: %s at %s:%d: ", #cond, __FILE__, __LINE__); \
      std::fprintf(stderr, __VA_ARGS__);                                                    \
      std::fprintf(stderr, "\n");                                                           \
      std::abort();                                                                         \
    }                                                                                       \
  } while (0)

}  // namespace nanogpt::fuzz
