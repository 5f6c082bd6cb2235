// Reference softmax cross-entropy over the first V of Vp logit columns: per-row losses, and the
// fused forward+backward that overwrites dlogits (may alias logits).
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/check.h"
#include "kernels/ops.h"

namespace nanogpt::ref {

namespace {

void check_targets(const int* targets, int64_t N, int V) {
  for (int64_t n = 0; n < N; ++n) {
    CHECK(targets[n] >= -1 && targets[n] < V,
          "crossentropy: targets[{}] = {} is outside [0, V={}) and not the ignore index -1; "
          "check the token data against the model's vocab_size",
          n, targets[n], V);
  }
}

// log(sum_v exp(x_v)) over v < V, in double.
double row_lse(const float* x, int V) {
  double m = x[0];
  for (int v = 1; v < V; ++v) m = std::max(m, static_cast<double>(x[v]));
  double s = 0;
  for (int v = 0; v < V; ++v) s += std::exp(x[v] - m);
  return m + std::log(s);
}

}  // namespace

void crossentropy_forward(float* losses, const float* logits, const int* targets, int64_t N, int V,
                          int Vp) {
  check_targets(targets, N, V);
  for (int64_t n = 0; n < N; ++n) {
    const float* x = logits + n * Vp;  // (Vp)
    losses[n] = targets[n] < 0 ? 0.0f : static_cast<float>(row_lse(x, V) - x[targets[n]]);
  }
}

void crossentropy_forward_backward(float* losses, float* dlogits, const float* logits,
                                   const int* targets, float dloss, int64_t N, int V, int Vp) {
  check_targets(targets, N, V);
  std::vector<double> row(Vp);
  for (int64_t n = 0; n < N; ++n) {
    const float* x = logits + n * Vp;  // (Vp), may alias dlogits
    float* d = dlogits + n * Vp;       // (Vp)
    const int y = targets[n];
    if (y < 0) {
      losses[n] = 0.0f;
      std::fill(d, d + Vp, 0.0f);
      continue;
    }
    const double lse = row_lse(x, V);
    losses[n] = static_cast<float>(lse - x[y]);
    for (int v = 0; v < V; ++v) row[v] = std::exp(x[v] - lse) - (v == y ? 1.0 : 0.0);
    for (int v = 0; v < V; ++v) d[v] = static_cast<float>(dloss * row[v]);
    for (int v = V; v < Vp; ++v) d[v] = 0.0f;
  }
}

}  // namespace nanogpt::ref
