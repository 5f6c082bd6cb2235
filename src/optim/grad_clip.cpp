// Global gradient norm (one OpenMP pass, double accumulation; optionally of the unscaled values)
// and clipping; the element loops are optim/elementwise.h's (dispatched per CPU target).
#include "optim/grad_clip.h"

#include <omp.h>

#include <algorithm>
#include <cmath>

#include "optim/elementwise.h"

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
      const auto [begin, end] = optim_loops::thread_slice(spec.numel, nt, tid);
      const double acc = optim_loops::sum_of_squares(g + begin, end - begin, unscale);
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
  {
    const int64_t nt = omp_get_num_threads(), tid = omp_get_thread_num();
    for (int s = 0; s < n_specs; ++s) {
      const auto [begin, end] = optim_loops::thread_slice(specs[s].numel, nt, tid);
      optim_loops::scale(grads + specs[s].offset + begin, end - begin, scale);
    }
  }
  return norm;
}

}  // namespace nanogpt
