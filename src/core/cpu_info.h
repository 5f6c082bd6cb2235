// What this CPU can do: its model name, the SIMD it has, its measured peak FLOP/s of fp32 FMAs and of
// bf16 dot products (short probes on all threads, the best cached per CPU model and thread count),
// the denominators of MFU and of the profile table, and its memory bandwidth.
#pragma once

#include <string>

namespace nanogpt {

struct PeakFlops {
  double flops_per_s = 0;  // fp32 FMA peak, all threads
  int threads = 0;
  bool from_cache = false;
};

std::string cpu_model_name();
// The SIMD that matters for the FMA peak, e.g. "avx2 fma avx512f avx512_bf16" (the peak cache key;
// isa_required.h has the full list); on ARM64 the levels Highway finds, e.g. "neon sve sve2".
std::string cpu_simd_features();
// Every instruction-set extension this CPU offers that the build knows (--version's "CPU offers"):
// x86 isa_required.h's list, ARM64 the levels Highway finds.
std::string cpu_isa_offered();

// True when this CPU has AVX512_BF16 (vdpbf16ps) and the dispatch runs the target that uses it
// (AVX3_DL, not capped below avx512_bf16).
bool have_bf16_dot_products();

// dtype=auto: "bfloat16" where this CPU multiplies bf16 natively (AVX512_BF16 or AMX-BF16, and
// this build can use it), else "float32"; `reason` says why, for the log.
struct AutoDtype {
  std::string dtype;
  std::string reason;
};
AutoDtype choose_auto_dtype();

// Which arithmetic a peak probe measures.
enum class PeakProbe {
  kFp32Fma,  // 16-wide fp32 FMAs, 2 FLOPs each per lane
  // bfloat16 dot products (vdpbf16ps: 32 bf16 pairs multiplied and added into 16 floats per
  // instruction, counted as 64 FLOPs), the bar for a bf16 run's matmuls and attention. Reads 0
  // when this build or CPU has no AVX512_BF16 (bf16 products then run as fp32 FMAs).
  kBf16Dot,
};

// Runs the probe (about 0.1 s) and returns the best of it and the value cached in
// cache_dir/peak_flops.json (updated when beaten): a busy machine measures low.
// An empty cache_dir means $XDG_CACHE_HOME/nanogpt or ~/.cache/nanogpt.
PeakFlops measure_peak_flops(int threads, const std::string& cache_dir = "", bool use_cache = true,
                             PeakProbe probe = PeakProbe::kFp32Fma);

// The best of `measured` and the value cached for probe_key (with this CPU's model, features and
// the thread count) in cache_dir/peak_flops.json, which keeps the best: the caching of
// measure_peak_flops, for probes defined elsewhere (kernels/compute_peaks.h). measured == 0 (no
// such arithmetic here) reads 0.
PeakFlops remember_best_peak(const std::string& probe_key, double measured, int threads,
                             const std::string& cache_dir = "", bool use_cache = true);

// Sustained memory bandwidth in bytes/s on `threads` threads: the best of a few passes of a
// STREAM-style triad (a = b + s*c) over three 32 MiB arrays (larger than the caches), counting
// 3 arrays moved per pass. Allocates 96 MiB for about 0.1 s.
double measure_memory_bandwidth(int threads);

}  // namespace nanogpt
