// Global gradient norm (one OpenMP pass, double accumulation; optionally of the unscaled values)
// and clipping.
#include "optim/grad_clip.h"

#include <omp.h>

#include <algorithm>
#include <cmath>

namespace nanogpt {

double grad_global_norm(const ParamTable& table, const float* grads, float unscale) {
  const auto& specs = table.specs();
  double sum = 0.0;
#pragma omp parallel reduction(+ : sum)
  {
    // Manual static split of every tensor (an orphaned `omp for reduction` cannot reduce into
    // the region's private sum).
    const int64_t nt = omp_get_num_threads(), tid = omp_get_thread_num();
    for (const auto& spec : specs) {
      const float* g = grads + spec.offset;  // (numel)
      const int64_t chunk = (spec.numel + nt - 1) / nt;
      const int64_t begin = std::min(spec.numel, tid * chunk);
      const int64_t end = std::min(spec.numel, begin + chunk);
      double acc = 0.0;
#pragma omp simd reduction(+ : acc)
      for (int64_t i = begin; i < end; ++i) {
        const float v = g[i] * unscale;  // what GradScaler::unscale stores
        acc += static_cast<double>(v) * v;
      }
      sum += acc;
    }
  }
  return std::sqrt(sum);
}

float clip_coefficient(double norm, double max_norm) {
  if (max_norm <= 0.0 || !std::isfinite(norm)) return 1.0f;
  const double coef = max_norm / (norm + 1e-6);  // as torch: clip only when coef < 1
  return coef < 1.0 ? static_cast<float>(coef) : 1.0f;
}

double clip_grad_norm(const ParamTable& table, float* grads, double max_norm) {
  const double norm = grad_global_norm(table, grads);
  if (max_norm <= 0.0 || !std::isfinite(norm)) return norm;
  if (max_norm / (norm + 1e-6) >= 1.0) return norm;
  const float scale = clip_coefficient(norm, max_norm);
  const auto& specs = table.specs();
  const int n_specs = static_cast<int>(specs.size());
#pragma omp parallel
  for (int s = 0; s < n_specs; ++s) {
    float* g = grads + specs[s].offset;  // (numel)
    const int64_t n = specs[s].numel;
#pragma omp for simd schedule(static) nowait
    for (int64_t i = 0; i < n; ++i) g[i] *= scale;
  }
  return norm;
}

}  // namespace nanogpt
