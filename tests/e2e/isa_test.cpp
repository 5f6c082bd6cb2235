// `nanogpt --version`, and the startup ISA check: the binary run on an emulated CPU without
// AVX-512 (qemu-user, -cpu Haswell: AVX2 + FMA) either exits with a message naming the missing
// instruction sets and the fix (a -march=native build on an AVX-512 machine) or runs (a portable
// NANOGPT_NATIVE=OFF build) — never SIGILL.
#include <gtest/gtest.h>

#include <filesystem>

#include "e2e_util.h"

namespace nanogpt::e2e {
namespace {

// The value after "label:" on its line of `--version`'s output.
std::string version_field(const std::string& output, const std::string& label) {
  const size_t at = output.find(label + ":");
  if (at == std::string::npos) return "";
  size_t begin = output.find_first_not_of(' ', at + label.size() + 1);
  return output.substr(begin, output.find('\n', begin) - begin);
}

TEST(Version, NamesBuildIsaOnednnAndThreads) {
  const std::string dir = scratch_dir("version");
  RunResult r = run_nanogpt(dir, "--version");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.rfind("nanogpt 0.", 0), 0u) << r.output;
  EXPECT_NE(r.output.find("(git "), std::string::npos) << r.output;
  EXPECT_NE(version_field(r.output, "build").find("GCC"), std::string::npos) << r.output;
  // The portable default build is compiled for the baseline; a NANOGPT_NATIVE build for this CPU.
  const bool native = std::string(NANOGPT_TARGET_ARCH) == "native";
  EXPECT_NE(version_field(r.output, "compiled for").find(native ? "avx2" : "baseline"),
            std::string::npos)
      << r.output;
  EXPECT_NE(version_field(r.output, "CPU offers").find("avx2"), std::string::npos) << r.output;
  EXPECT_NE(version_field(r.output, "oneDNN").find("2."), std::string::npos) << r.output;
  EXPECT_EQ(version_field(r.output, "threads").rfind("2 ", 0), 0u) << r.output;
  // Whether the CUDA backend is in, for which architectures, and the GPU found or why none.
  const std::string cuda = version_field(r.output, "CUDA");
  if (cuda.rfind("backend compiled in (sm_", 0) == 0) {
    EXPECT_TRUE(cuda.find("); GPU: ") != std::string::npos ||
                cuda.find("); no usable GPU: ") != std::string::npos)
        << r.output;
  } else {
    EXPECT_EQ(cuda.rfind("not compiled in (", 0), 0u) << r.output;
  }
}

TEST(Version, NamesTheCpuTargetAndHonoursTheCap) {
  const std::string dir = scratch_dir("version-target");
  RunResult r = run_nanogpt(dir, "--version");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string target = version_field(r.output, "CPU target");
  EXPECT_NE(target.find("(compiled: baseline"), std::string::npos) << r.output;
  EXPECT_EQ(target.find("capped"), std::string::npos) << r.output;

  r = run_command(dir, std::string("NANOGPT_CPU_TARGET=sse4 '") + NANOGPT_BINARY + "' --version");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(version_field(r.output, "CPU target").rfind("sse4 [Highway SSE4]", 0), 0u) << r.output;
  EXPECT_NE(r.output.find("capped by NANOGPT_CPU_TARGET=sse4"), std::string::npos) << r.output;
  // oneDNN's matmuls follow the cap (its floor is SSE4.1).
  EXPECT_NE(version_field(r.output, "oneDNN").find("kernels for sse41"), std::string::npos)
      << r.output;

  r = run_command(dir, std::string("NANOGPT_CPU_TARGET=avx3 '") + NANOGPT_BINARY + "' --version");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("NANOGPT_CPU_TARGET='avx3' is not a CPU target"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("baseline, sse4, avx2, avx512"), std::string::npos) << r.output;
}

TEST(IsaCheck, CpuWithoutTheCompiledExtensionsGetsAClearMessage) {
  const std::string dir = scratch_dir("isa");
  ASSERT_EQ(run_command(dir, "command -v qemu-x86_64").exit_code, 0)
      << "qemu-x86_64 not found: scripts/setup.sh installs Debian's qemu-user for this test";
  const RunResult native = run_nanogpt(dir, "--version");
  ASSERT_EQ(native.exit_code, 0) << native.output;
  const std::string compiled = version_field(native.output, "compiled for");
  const bool needs_avx512 = compiled.find("avx512") != std::string::npos;

  const RunResult r =
      run_command(dir, std::string("qemu-x86_64 -cpu Haswell '") + NANOGPT_BINARY + "' --version");
  if (needs_avx512) {
    EXPECT_EQ(r.exit_code, 1) << r.output;  // not killed by SIGILL (that would be -1)
    EXPECT_NE(r.output.find("this CPU lacks: avx512f"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("NANOGPT_NATIVE=OFF"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("nanogpt 0."), std::string::npos) << r.output;  // main never ran
  } else {
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("nanogpt 0."), std::string::npos) << r.output;
  }
}

}  // namespace
}  // namespace nanogpt::e2e
