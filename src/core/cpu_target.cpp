// CpuTarget: the dispatch levels, the CPU's features, the NANOGPT_CPU_TARGET cap and how it is
// handed to Highway.
#include "core/cpu_target.h"

#include <fmt/format.h>
#include <hwy/highway.h>
#include <hwy/targets.h>

#include <cstdlib>

#include "core/check.h"

#if HWY_ARCH_X86
#include <cpuid.h>
#endif

namespace nanogpt {

namespace {

#if HWY_ARCH_X86
// cpuid leaf 7 subleaf 0: EBX, ECX, EDX.
struct Leaf7 {
  unsigned ebx = 0, ecx = 0, edx = 0;
};
Leaf7 read_leaf7() {
  Leaf7 r;
  unsigned eax = 0;
  if (__get_cpuid_count(7, 0, &eax, &r.ebx, &r.ecx, &r.edx) == 0) return {};
  return r;
}
#endif

}  // namespace

// cpuid is read once per process (the features do not change): in a virtual machine each cpuid
// traps to the hypervisor, and the kernels ask per call (have_bf16_dot_products).
bool cpu_has_avx512_bf16() {
#if HWY_ARCH_X86
  static const bool has = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) == 0) return false;
    return (eax & (1u << 5)) != 0 && (read_leaf7().ebx & (1u << 16)) != 0;  // BF16, AVX512F
  }();
  return has;
#else
  return false;
#endif
}

bool cpu_has_amx_bf16() {
#if HWY_ARCH_X86
  static const bool has = [] {
    const Leaf7 l = read_leaf7();
    const bool amx_bf16 = (l.edx & (1u << 22)) != 0, amx_tile = (l.edx & (1u << 24)) != 0;
    const bool avx512_fp16 = (l.edx & (1u << 23)) != 0;
    return amx_bf16 && amx_tile && avx512_fp16;
  }();
  return has;
#else
  return false;
#endif
}

std::vector<CpuLevel> CpuTarget::all_levels() {
#if HWY_ARCH_X86
  // AVX3_DL is compiled in (HWY_WANT_AVX3_DL); where a build lacks it, AVX3 serves the bf16 levels.
  const int64_t avx512_plus = HWY_AVX3_DL | HWY_AVX3;
  return {
      {"baseline", HWY_EMU128 | HWY_SCALAR, false, false},
      {"sse4", HWY_SSSE3 | HWY_SSE4, false, false},
      {"avx2", HWY_AVX2, false, false},
      {"avx512", HWY_AVX3, false, false},
      {"avx512_bf16", avx512_plus, true, false},
      {"avx512_spr", avx512_plus, true, true},
  };
#elif HWY_ARCH_ARM_A64
  return {
      {"baseline", HWY_EMU128 | HWY_SCALAR, false, false},
      {"neon", HWY_NEON, false, false},
      {"sve", HWY_SVE | HWY_SVE_256, false, false},
      {"sve2", HWY_SVE2 | HWY_SVE2_128, false, false},
  };
#else
  return {{"baseline", HWY_EMU128 | HWY_SCALAR, false, false}};
#endif
}

std::string CpuTarget::level_names() {
  std::string s;
  for (const CpuLevel& l : all_levels()) s += (s.empty() ? "" : ", ") + l.name;
  return s;
}

CpuTarget::CpuTarget(const std::string& cap)
    : cap_(cap),
      hwy_supported_(hwy::SupportedTargets()),
      cpu_bf16_dot_(cpu_has_avx512_bf16()),
      cpu_amx_(cpu_has_amx_bf16()) {
  const std::vector<CpuLevel> levels = all_levels();
  size_t top = levels.size();
  if (!cap.empty()) {
    for (size_t i = 0; i < levels.size(); ++i) {
      if (levels[i].name == cap) top = i + 1;
    }
    CHECK(top <= levels.size() && levels[top - 1].name == cap,
          "{}='{}' is not a CPU target of this build: expected one of {} (lowest first), or unset "
          "for the best this CPU runs",
          kCapVariable, cap, level_names());
  }
  chosen_ = levels.front();
  for (size_t i = 0; i < top; ++i) {
    if (compiled_in(levels[i]) && cpu_runs(levels[i])) chosen_ = levels[i];
  }
}

CpuTarget CpuTarget::from_environment() {
  const char* cap = std::getenv(kCapVariable);
  return CpuTarget(cap != nullptr ? cap : "");
}

bool CpuTarget::cap_allows_bf16_dot() {
  const char* cap = std::getenv(kCapVariable);
  if (cap == nullptr || *cap == '\0') return true;
  for (const CpuLevel& l : all_levels()) {
    if (l.name == cap) return l.bf16_dot;  // the bf16 levels are the top ones
  }
  return CpuTarget(cap).has_bf16_dot();  // not a level: the constructor's error
}

bool CpuTarget::compiled_in(const CpuLevel& level) const {
  return (level.hwy_targets & HWY_TARGETS) != 0;
}

bool CpuTarget::cpu_runs(const CpuLevel& level) const {
  return (level.hwy_targets & hwy_supported_) != 0 && (!level.bf16_dot || cpu_bf16_dot_) &&
         (!level.amx || cpu_amx_);
}

void CpuTarget::apply() const {
  // Highway's better targets have lower bits: the dispatch may use the chosen level's best target
  // and those below it (the bits from `best` up). hwy::SupportedTargets() itself stays uncapped,
  // so a later CpuTarget still sees what the CPU offers.
  const int64_t allowed = chosen_.hwy_targets & hwy_supported_ & HWY_TARGETS;
  const int64_t best = allowed & -allowed;  // lowest set bit = best allowed target
  hwy::GetChosenTarget().Update(hwy_supported_ & ~(best - 1));
}

std::string CpuTarget::hwy_target_name() const {
  const int64_t allowed = chosen_.hwy_targets & hwy_supported_ & HWY_TARGETS;
  return hwy::TargetName(allowed & -allowed);
}

std::vector<std::string> CpuTarget::compiled() const {
  std::vector<std::string> names;
  for (const CpuLevel& l : all_levels()) {
    if (compiled_in(l)) names.push_back(l.name);
  }
  return names;
}

std::vector<std::string> CpuTarget::runnable() const {
  std::vector<std::string> names;
  for (const CpuLevel& l : all_levels()) {
    if (compiled_in(l) && cpu_runs(l)) names.push_back(l.name);
  }
  return names;
}

std::vector<std::string> CpuTarget::offered() const {
  std::vector<std::string> names;
  for (const CpuLevel& l : all_levels()) {
    if (cpu_runs(l)) names.push_back(l.name);
  }
  return names;
}

std::string CpuTarget::describe() const {
  std::string s = fmt::format("{} [Highway {}] (compiled: {}", chosen(), hwy_target_name(),
                              fmt::join(compiled(), " "));
  if (!cap_.empty()) s += fmt::format("; capped by {}={}", kCapVariable, cap_);
  return s + ")";
}

}  // namespace nanogpt
