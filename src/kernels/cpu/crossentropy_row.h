// One row of the softmax cross-entropy over the first V of Vp columns: the row code of the float32
// kernels (crossentropy.cpp) and of the soft-capped head's fused forward-backward (arch.cpp), which
// runs it on each capped row inside its own parallel loop: no nested region and no dispatch per row
// (at 2048 rows those cost ~2.8 us a row here, 85% of the capped head's time). Always inlined, so
// each dispatched kernel gets it compiled for its own CPU target (as vec_math.h).
#pragma once

#include <cmath>
#include <cstdint>

#include "core/check.h"
#include "kernels/cpu/vec_math.h"

namespace nanogpt::cpu {

// Every target is a token id below V or the ignore index -1.
inline void check_crossentropy_targets(const int* targets, int64_t N, int V) {
  int64_t bad = -1;
  for (int64_t n = 0; n < N && bad < 0; ++n) {
    if (targets[n] < -1 || targets[n] >= V) bad = n;
  }
  CHECK(bad < 0,
        "crossentropy: targets[{}] = {} is outside [0, V={}) and not the ignore index -1; check "
        "the token data against the model's vocab_size",
        bad, bad < 0 ? 0 : targets[bad], V);
}

// log(sum_{v<V} exp(x_v)): max pass, then a vectorized sum of exps (row stays in cache).
[[gnu::always_inline]] inline float row_lse(const float* x, int V) {
  float m = -INFINITY;
#pragma omp simd reduction(max : m)
  for (int v = 0; v < V; ++v) m = x[v] > m ? x[v] : m;
  float s = 0;
#pragma omp simd reduction(+ : s)
  for (int v = 0; v < V; ++v) s += fast_exp(x[v] - m);
  return m + std::log(s);
}

// x (Vp) one row of logits, y its target: *loss = lse - x_y and d (Vp, may alias x) = dloss *
// (softmax(x) - onehot(y)) over the first V columns, 0 past them; y = -1: loss 0, d all 0.
[[gnu::always_inline]] inline void crossentropy_row_forward_backward(float* loss, float* d,
                                                                     const float* x, int y,
                                                                     float dloss, int V, int Vp) {
  if (y < 0) {
    *loss = 0.0f;
    for (int v = 0; v < Vp; ++v) d[v] = 0.0f;
    return;
  }
  const float lse = row_lse(x, V);
  *loss = lse - x[y];
#pragma omp simd
  for (int v = 0; v < V; ++v) d[v] = dloss * fast_exp(x[v] - lse);
  d[y] -= dloss;
  for (int v = V; v < Vp; ++v) d[v] = 0.0f;
}

}  // namespace nanogpt::cpu
