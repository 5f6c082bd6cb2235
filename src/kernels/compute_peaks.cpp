// ComputePeaks: the probes of a run's arithmetic units, and which one each use is judged against.
#include "kernels/compute_peaks.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/cpu_target.h"
#include "core/timer.h"
#include "kernels/cpu_backend.h"
#include "kernels/ops_lowp.h"

namespace nanogpt {

namespace {

// The best FLOP/s of matmul_forward in dtype over a few calls on an MLP-sized product (GPT-2's
// 768 -> 3072 over 2048 rows), after one warm-up call that creates oneDNN's primitive.
double lowp_matmul_flops(DType dtype, int threads) {
  constexpr int64_t N = 2048;
  constexpr int C = 768, OC = 3072;
  const int saved = omp_get_max_threads();
  omp_set_num_threads(threads);
  CpuBackend ctx;
  const size_t es = dtype_size(dtype);
  std::vector<unsigned char> inp(N * C * es), weight(size_t{OC} * C * es), out(N * OC * es);
  // Small values, the same in any dtype: 1/64 as bf16 or fp16 bits.
  const uint16_t bits = dtype == DType::kBF16 ? 0x3C80 : 0x2400;
  for (size_t i = 0; i < inp.size(); i += 2) std::memcpy(&inp[i], &bits, 2);
  for (size_t i = 0; i < weight.size(); i += 2) std::memcpy(&weight[i], &bits, 2);
  double best = 0;
  for (int rep = 0; rep < 6; ++rep) {
    Timer timer;
    cpu::matmul_forward(ctx, TypedPtr(out.data(), dtype), ConstTypedPtr(inp.data(), dtype),
                        ConstTypedPtr(weight.data(), dtype), nullptr, N, C, OC);
    const double s = timer.seconds();
    if (rep > 0) best = std::max(best, 2.0 * N * C * OC / s);
  }
  omp_set_num_threads(saved);
  return best;
}

}  // namespace

double ComputePeaks::arithmetic() const {
  if (dtype == DType::kBF16 && bf16_dot.flops_per_s > 0) return bf16_dot.flops_per_s;
  return fp32_fma.flops_per_s;
}

double ComputePeaks::matmul() const { return std::max(arithmetic(), lowp_matmul.flops_per_s); }

std::string ComputePeaks::matmul_unit() const {
  if (lowp_matmul.flops_per_s > arithmetic()) {
    return std::string(dtype_name(dtype)) + " matmul (oneDNN)";
  }
  return dtype == DType::kBF16 && bf16_dot.flops_per_s > 0 ? "bf16 dot products" : "fp32 FMA";
}

bool ComputePeaks::matmul_from_cache() const {
  if (lowp_matmul.flops_per_s > arithmetic()) return lowp_matmul.from_cache;
  return dtype == DType::kBF16 && bf16_dot.flops_per_s > 0 ? bf16_dot.from_cache
                                                           : fp32_fma.from_cache;
}

double ComputePeaks::for_op_class(OpClass c) const {
  switch (c) {
    case OpClass::kMatmul:
    case OpClass::kClassifier:
      return matmul();
    case OpClass::kAttention:
      return arithmetic();
    case OpClass::kOptimizer:
      // Its FLOPs are Muon's Newton-Schulz products: matmuls in bf16 runs (optim/newton_schulz.h),
      // float32 ones otherwise (float16 runs included).
      return dtype == DType::kBF16 ? matmul() : fp32_fma.flops_per_s;
    default:
      return fp32_fma.flops_per_s;
  }
}

ComputePeaks measure_compute_peaks(DType dtype, int threads, bool use_cache) {
  ComputePeaks p;
  p.dtype = dtype;
  p.fp32_fma = measure_peak_flops(threads, "", use_cache);
  if (dtype == DType::kBF16) {
    p.bf16_dot = measure_peak_flops(threads, "", use_cache, PeakProbe::kBf16Dot);
  }
  if (dtype != DType::kF32) {
    // Keyed by the dispatch level too: a capped run's oneDNN is capped with it.
    const std::string key = std::string(dtype_name(dtype)) + " matmul | " + dispatched_hwy_target();
    p.lowp_matmul =
        remember_best_peak(key, lowp_matmul_flops(dtype, threads), threads, "", use_cache);
  }
  return p;
}

}  // namespace nanogpt
