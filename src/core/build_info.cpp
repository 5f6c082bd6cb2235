// build_info(): facts fixed at compile time (CMake passes the version, build type and target; the
// git commit comes from the generated nanogpt_git_commit.h; the ISA from the compiler's macros).
#include "core/build_info.h"

#include <fmt/format.h>

#include "core/isa_required.h"
#include "nanogpt_git_commit.h"

namespace nanogpt {

extern "C" const unsigned nanogpt_compiled_isa = compiled_isa_of_this_file();

BuildInfo build_info() {
  BuildInfo info;
  info.version = NANOGPT_VERSION;
  info.git_commit = NANOGPT_GIT_COMMIT;
  info.build_type = NANOGPT_BUILD_TYPE;
#if defined(__clang__)
  info.compiler =
      fmt::format("Clang {}.{}.{}", __clang_major__, __clang_minor__, __clang_patchlevel__);
#elif defined(__GNUC__)
  info.compiler = fmt::format("GCC {}.{}.{}", __GNUC__, __GNUC_MINOR__, __GNUC_PATCHLEVEL__);
#else
  info.compiler = "unknown compiler";
#endif
  info.target = NANOGPT_TARGET_ARCH;
  info.compiled_isa = isa_names(nanogpt_compiled_isa);
#if defined(__aarch64__)
  // ARM64: NEON is part of armv8-a; the extensions beyond it the compiler may emit.
  info.compiled_isa = "neon";
#if defined(__ARM_FEATURE_SVE)
  info.compiled_isa += " sve";
#endif
#if defined(__ARM_FEATURE_SVE2)
  info.compiled_isa += " sve2";
#endif
#endif
  if (info.compiled_isa.empty()) info.compiled_isa = "baseline x86-64";
  return info;
}

}  // namespace nanogpt
