// The startup ISA check: before any static initializer or main() (constructor priority 101 runs
// first), compare the instruction sets the code was compiled for with what this CPU offers, and
// exit with a message naming the missing ones and the fix instead of dying with SIGILL later.
// Compiled for the baseline (CMakeLists.txt), and calls only baseline code and libc. The bits are
// x86 extensions (core/isa_required.h): an ARM64 build has none compiled in, so there the check
// passes (that build is armv8-a outside its dispatched kernels, core/cpu_target.h).
#include <cstdio>
#include <cstdlib>

#include "core/isa_required.h"

namespace {

__attribute__((constructor(101))) void check_cpu_supports_build() {
  const unsigned compiled = nanogpt::nanogpt_compiled_isa;
  const unsigned missing = compiled & ~nanogpt::nanogpt_cpu_isa();
  if (missing == 0) return;
  char missing_names[512], compiled_names[512];
  nanogpt::nanogpt_isa_names(missing, missing_names, sizeof missing_names);
  nanogpt::nanogpt_isa_names(compiled, compiled_names, sizeof compiled_names);
  std::fprintf(stderr,
               "error: this nanogpt binary was compiled for a CPU with %s (target '%s'), but this "
               "CPU lacks: %s.\n"
               "Fix: rebuild on this machine (bash scripts/setup.sh), or build a portable binary "
               "with `cmake -DNANOGPT_NATIVE=OFF` (x86-64-v3: AVX2 + FMA).\n",
               compiled_names, NANOGPT_TARGET_ARCH, missing_names);
  std::exit(1);
}

}  // namespace
