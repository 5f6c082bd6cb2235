// Global gradient norm (one pass through the backend's sum_of_squares, double accumulation;
// optionally of the unscaled values) and clipping (the backend's scale_tensors).
#include "optim/grad_clip.h"

#include <cmath>
#include <vector>

#include "kernels/backend.h"

namespace nanogpt {
namespace {

std::vector<TensorSpan> spans_of(const ParamTable& table) {
  std::vector<TensorSpan> spans;
  spans.reserve(table.specs().size());
  for (const auto& s : table.specs()) spans.push_back({s.offset, s.numel});
  return spans;
}

}  // namespace

double grad_global_norm(Backend& backend, const ParamTable& table, const float* grads,
                        float unscale) {
  return std::sqrt(backend.sum_of_squares(grads, spans_of(table), unscale));
}

float clip_coefficient(double norm, double max_norm) {
  if (max_norm <= 0.0 || !std::isfinite(norm)) return 1.0f;
  const double coef = max_norm / (norm + 1e-6);  // as torch: clip only when coef < 1
  return coef < 1.0 ? static_cast<float>(coef) : 1.0f;
}

double clip_grad_norm(Backend& backend, const ParamTable& table, float* grads, double max_norm) {
  const double norm = grad_global_norm(backend, table, grads);
  if (max_norm <= 0.0 || !std::isfinite(norm)) return norm;
  if (max_norm / (norm + 1e-6) >= 1.0) return norm;
  backend.scale_tensors(grads, spans_of(table), clip_coefficient(norm, max_norm));
  return norm;
}

}  // namespace nanogpt
