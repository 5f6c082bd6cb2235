// nanogpt_cpu_isa() and nanogpt_isa_names(): compiled for the architecture's baseline
// (CMakeLists.txt sets the flags of this file), in plain C style with no library templates, because
// the startup ISA check (src/cli/isa_guard.cpp) calls them before any code compiled for the build's
// -march may run. The bits are x86 extensions: on other architectures (ARM64) the CPU has none of
// them and the build is compiled for none (isa_required.h), so the check passes; ARM64's levels are
// read by Highway (core/cpu_target.cpp).
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <cstring>

#include "core/isa_required.h"

namespace nanogpt {
namespace {

struct IsaName {
  unsigned bit;
  const char* name;
};

constexpr IsaName kIsaNames[] = {
    {kIsaAvx2, "avx2"},
    {kIsaFma, "fma"},
    {kIsaF16c, "f16c"},
    {kIsaBmi2, "bmi2"},
    {kIsaAvx512f, "avx512f"},
    {kIsaAvx512bw, "avx512bw"},
    {kIsaAvx512vl, "avx512vl"},
    {kIsaAvx512dq, "avx512dq"},
    {kIsaAvx512cd, "avx512cd"},
    {kIsaAvx512bf16, "avx512_bf16"},
    {kIsaAvx512vnni, "avx512_vnni"},
    {kIsaAvx512vbmi, "avx512_vbmi"},
    {kIsaAvx512vbmi2, "avx512_vbmi2"},
    {kIsaAvx512bitalg, "avx512_bitalg"},
    {kIsaAvx512vpopcntdq, "avx512_vpopcntdq"},
    {kIsaAvx512ifma, "avx512_ifma"},
    {kIsaGfni, "gfni"},
    {kIsaVaes, "vaes"},
    {kIsaVpclmulqdq, "vpclmulqdq"},
    {kIsaAvxvnni, "avx_vnni"},
};

}  // namespace
}  // namespace nanogpt

extern "C" unsigned nanogpt_cpu_isa() {
#if !(defined(__x86_64__) || defined(__i386__))
  return 0;
#else
  using namespace nanogpt;
  __builtin_cpu_init();
  unsigned m = 0;
  if (__builtin_cpu_supports("avx2")) m |= kIsaAvx2;
  if (__builtin_cpu_supports("fma")) m |= kIsaFma;
#if defined(__clang__)
  // clang 14's __builtin_cpu_supports does not know f16c or vaes: ask CPUID directly.
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C)) m |= kIsaF16c;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d) && (c & bit_VAES)) m |= kIsaVaes;
#else
  if (__builtin_cpu_supports("f16c")) m |= kIsaF16c;
  if (__builtin_cpu_supports("vaes")) m |= kIsaVaes;
#endif
  if (__builtin_cpu_supports("bmi2")) m |= kIsaBmi2;
  if (__builtin_cpu_supports("avx512f")) m |= kIsaAvx512f;
  if (__builtin_cpu_supports("avx512bw")) m |= kIsaAvx512bw;
  if (__builtin_cpu_supports("avx512vl")) m |= kIsaAvx512vl;
  if (__builtin_cpu_supports("avx512dq")) m |= kIsaAvx512dq;
  if (__builtin_cpu_supports("avx512cd")) m |= kIsaAvx512cd;
  if (__builtin_cpu_supports("avx512bf16")) m |= kIsaAvx512bf16;
  if (__builtin_cpu_supports("avx512vnni")) m |= kIsaAvx512vnni;
  if (__builtin_cpu_supports("avx512vbmi")) m |= kIsaAvx512vbmi;
  if (__builtin_cpu_supports("avx512vbmi2")) m |= kIsaAvx512vbmi2;
  if (__builtin_cpu_supports("avx512bitalg")) m |= kIsaAvx512bitalg;
  if (__builtin_cpu_supports("avx512vpopcntdq")) m |= kIsaAvx512vpopcntdq;
  if (__builtin_cpu_supports("avx512ifma")) m |= kIsaAvx512ifma;
  if (__builtin_cpu_supports("gfni")) m |= kIsaGfni;
  if (__builtin_cpu_supports("vpclmulqdq")) m |= kIsaVpclmulqdq;
#if defined(__clang__)
  // clang 14's __builtin_cpu_supports does not know avxvnni; report it only when compiled for it.
  if (nanogpt_compiled_isa & kIsaAvxvnni) m |= kIsaAvxvnni;
#else
  if (__builtin_cpu_supports("avxvnni")) m |= kIsaAvxvnni;
#endif
  return m;
#endif  // x86
}

extern "C" void nanogpt_isa_names(unsigned mask, char* buf, size_t n) {
  if (n == 0) return;
  buf[0] = '\0';
  size_t used = 0;
  for (const auto& entry : nanogpt::kIsaNames) {
    if (!(mask & entry.bit)) continue;
    const size_t len = std::strlen(entry.name);
    if (used + len + 2 > n) break;
    if (used > 0) buf[used++] = ' ';
    std::memcpy(buf + used, entry.name, len);
    used += len;
    buf[used] = '\0';
  }
}
