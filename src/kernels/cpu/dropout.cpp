// Fast dropout with the counter-based mask (element i kept iff hash_uniform(seed, i) >= p, scaled
// by 1/(1-p)); the mask is recomputed in backward, never stored.
#include "kernels/cpu/vec_math.h"
#include "kernels/cpu/parallel.h"
#include "kernels/ops.h"

namespace nanogpt::cpu {

void dropout_forward(float* out, const float* inp, int64_t N, float p, uint64_t seed) {
  if (p == 0) {
#pragma omp parallel for simd schedule(static) if (worth_parallel(3 * N))
    for (int64_t i = 0; i < N; ++i) out[i] = inp[i];
    return;
  }
  const float scale = 1.0f / (1.0f - p);
#pragma omp parallel for simd schedule(static) if (worth_parallel(3 * N))
  for (int64_t i = 0; i < N; ++i) out[i] = inp[i] * dropout_keep(seed, i, p, scale);
}

void dropout_backward(float* dinp, const float* dout, int64_t N, float p, uint64_t seed) {
  if (p == 0) {
#pragma omp parallel for simd schedule(static) if (worth_parallel(3 * N))
    for (int64_t i = 0; i < N; ++i) dinp[i] += dout[i];
    return;
  }
  const float scale = 1.0f / (1.0f - p);
#pragma omp parallel for simd schedule(static) if (worth_parallel(3 * N))
  for (int64_t i = 0; i < N; ++i) dinp[i] += dout[i] * dropout_keep(seed, i, p, scale);
}

}  // namespace nanogpt::cpu
