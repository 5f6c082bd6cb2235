// Fast LayerNorm: forward parallel over rows (two passes over a cached row), also fused with the
// residual add that feeds it (residual_layernorm_forward); backward computes
// dinp per row and reduces dweight/dbias through per-thread partial rows summed in thread order
// (deterministic for a fixed thread count).
#include <cmath>

#include "kernels/cpu/layernorm_impl.h"
#include "kernels/cpu/parallel.h"
#include "kernels/ops.h"

namespace nanogpt::cpu {

// One row (layernorm_impl.h): out-of-line, so that every caller runs the same code.
void layernorm_row(float* o, float* mean, float* rstd, const float* x, const float* weight,
                   const float* bias, int C) {
  float sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int c = 0; c < C; ++c) sum += x[c];
  const float m = sum / C;
  float var = 0;
#pragma omp simd reduction(+ : var)
  for (int c = 0; c < C; ++c) var += (x[c] - m) * (x[c] - m);
  const float s = 1.0f / std::sqrt(var / C + 1e-5f);
  if (bias) {
#pragma omp simd
    for (int c = 0; c < C; ++c) o[c] = (x[c] - m) * s * weight[c] + bias[c];
  } else {
#pragma omp simd
    for (int c = 0; c < C; ++c) o[c] = (x[c] - m) * s * weight[c];
  }
  *mean = m;
  *rstd = s;
}

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                       const float* bias, int64_t N, int C) {
#pragma omp parallel for schedule(static) if (worth_parallel(2 * N * C))
  for (int64_t n = 0; n < N; ++n) {
    layernorm_row(out + n * C, mean + n, rstd + n, inp + n * C, weight, bias, C);
  }
}

// The residual add feeding the next LayerNorm, in one pass: each row of res = a + b is summed
// while it is in cache and normalized right away (one parallel region, one read of a and b).
void residual_layernorm_forward(float* res, float* out, float* mean, float* rstd, const float* a,
                                const float* b, const float* weight, const float* bias, int64_t N,
                                int C) {
#pragma omp parallel for schedule(static) if (worth_parallel(4 * N * C))
  for (int64_t n = 0; n < N; ++n) {
    float* r = res + n * C;
#pragma omp simd
    for (int c = 0; c < C; ++c) r[c] = a[n * C + c] + b[n * C + c];
    layernorm_row(out + n * C, mean + n, rstd + n, r, weight, bias, C);
  }
}

void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                        const float* inp, const float* weight, const float* mean, const float* rstd,
                        int64_t N, int C) {
  layernorm_backward_rows(
      dinp, dweight, dbias, [dout, C](int64_t n, float*) { return dout + n * C; }, inp, weight,
      mean, rstd, N, C);
}

}  // namespace nanogpt::cpu
