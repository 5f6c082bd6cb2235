// CpuTarget: which instruction-set level the dispatched kernels run at. Kernels are compiled for
// several targets in one binary (Google Highway's foreach_target.h + HWY_DYNAMIC_DISPATCH); this
// names those levels, reads what the CPU offers, applies the user's cap (NANOGPT_CPU_TARGET) to
// Highway's choice, and reports the level chosen and the ones compiled in.
//
// Levels, lowest first. x86-64: baseline (SSE2, Highway's EMU128), sse4, avx2 (with FMA), avx512,
// avx512_bf16 (Zen 4/5, Cooper Lake: AVX512_BF16 dot products), avx512_spr (Sapphire/Granite
// Rapids: AVX512_FP16 and AMX-BF16 tiles). ARM64: baseline, neon, sve, sve2. avx512_bf16 and
// avx512_spr run Highway's AVX3_DL code (AVX3 where AVX3_DL is not compiled); what they add is
// read by the kernels that use it (has_bf16_dot(), has_amx()).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace nanogpt {

struct CpuLevel {
  std::string name;
  int64_t hwy_targets = 0;  // Highway target bits this level allows (HWY_AVX2, ...)
  bool bf16_dot = false;    // AVX512_BF16 (vdpbf16ps)
  bool amx = false;         // AMX-BF16 tiles and AVX512_FP16
};

class CpuTarget {
 public:
  // The environment variable that caps the dispatch (for tests, benchmarks and bug reports).
  static constexpr const char* kCapVariable = "NANOGPT_CPU_TARGET";

  // Reads the CPU and the cap: `cap` names a level ("" = no cap). Throws nanogpt::Error listing the
  // names when `cap` is not one of this architecture's levels. Does not touch Highway's choice.
  explicit CpuTarget(const std::string& cap);
  // The cap from NANOGPT_CPU_TARGET (unset or empty: none).
  static CpuTarget from_environment();

  // Makes Highway's dynamic dispatch pick chosen() (targets above the cap disabled). Process-wide
  // (Highway keeps its choice in one place); call before kernels run, from one thread.
  void apply() const;

  const std::string& chosen() const { return chosen_.name; }
  bool has_bf16_dot() const { return chosen_.bf16_dot; }
  bool has_amx() const { return chosen_.amx; }
  const std::string& cap() const { return cap_; }
  // Levels this binary has code for, those of them this CPU can run, and every level this CPU
  // offers, compiled in or not (lowest first; read by Highway: cpuid on x86, Linux's
  // getauxval(AT_HWCAP/AT_HWCAP2) on ARM64).
  std::vector<std::string> compiled() const;
  std::vector<std::string> runnable() const;
  std::vector<std::string> offered() const;
  // "avx2 [Highway AVX2] (compiled: baseline sse4 avx2 avx512 avx512_bf16 avx512_spr; capped by
  // NANOGPT_CPU_TARGET=avx2)": the log's and --version's words.
  std::string describe() const;
  // Highway's target name for chosen() on this CPU (what dispatched_hwy_target() reads after
  // apply).
  std::string hwy_target_name() const;

  // Whether NANOGPT_CPU_TARGET leaves the bf16 dot-product levels (avx512_bf16 and up) in reach:
  // unset, empty, or such a level. Reads the environment only: constructing a CpuTarget asks
  // Highway for the CPU's targets, and Highway 1.0's SupportedTargets() re-reads cpuid on every
  // call (~30 us in a virtual machine, where each cpuid traps to the hypervisor), too slow for the
  // kernels that ask per call (have_bf16_dot_products). Throws for an unknown name, as the
  // constructor does.
  static bool cap_allows_bf16_dot();

  // Every level of this architecture, lowest first, and the names joined for messages.
  static std::vector<CpuLevel> all_levels();
  static std::string level_names();

 private:
  bool cpu_runs(const CpuLevel& level) const;
  bool compiled_in(const CpuLevel& level) const;

  std::string cap_;
  CpuLevel chosen_;
  int64_t hwy_supported_ = 0;  // Highway's targets this CPU supports, before the cap
  bool cpu_bf16_dot_ = false;
  bool cpu_amx_ = false;
};

// What the CPU offers beyond Highway's targets (cpuid on x86; false elsewhere). No kernel of ours
// uses AMX tiles yet (oneDNN's matmuls do, on their own): the level is recognised and reported so
// that the AMX attention kernel has its place; it asks Linux for the tile state when it lands.
bool cpu_has_avx512_bf16();
bool cpu_has_amx_bf16();

// Highway's name of the target HWY_DYNAMIC_DISPATCH runs now ("AVX2", "AVX3_DL", "EMU128", ...),
// and the fp32 FMA peak probe at that target's width: FLOPs done by `iters` steps of 12 chains
// (dispatched_probes.cpp); and the bf16 dot-product probe (vdpbf16ps), 0 unless the target is
// AVX3_DL (callers check the CPU has AVX512_BF16 first).
std::string dispatched_hwy_target();
double fma_probe_flops(int64_t iters, float seed);
double bf16_dot_probe_flops(int64_t iters, float seed);

}  // namespace nanogpt
