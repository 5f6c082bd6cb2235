// What this binary is: version, git commit, build type, compiler, and the instruction sets it was
// compiled for (the facts `nanogpt --version` prints and the startup ISA check relies on).
#pragma once

#include <string>

namespace nanogpt {

struct BuildInfo {
  std::string version;       // project version, e.g. "0.3.0"
  std::string git_commit;    // `git describe` at build time, "unknown" outside a checkout
  std::string build_type;    // Release, Debug, ...
  std::string compiler;      // e.g. "GCC 12.2.0"
  std::string target;        // -march the build used: "native" or "x86-64-v3"
  std::string compiled_isa;  // instruction sets the compiler may emit, e.g. "avx2 fma avx512f ...",
                             // "baseline x86-64"; ARM64: "neon" (+ "sve", "sve2")
};

BuildInfo build_info();

}  // namespace nanogpt
