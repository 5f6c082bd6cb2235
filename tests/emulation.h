// Whether the tests run under an emulated CPU (scripts/test_arm64.sh's qemu-aarch64 sets
// NANOGPT_TEST_EMULATED=1), for the tests whose large shapes take minutes there: they take smaller
// shapes of the same code paths under emulation, and the native suite keeps the large ones.
#pragma once

#include <cstdlib>
#include <string>

namespace nanogpt::testing {

inline bool running_emulated() {
  const char* v = std::getenv("NANOGPT_TEST_EMULATED");
  return v != nullptr && std::string(v) != "" && std::string(v) != "0";
}

}  // namespace nanogpt::testing
