// Fast residual add (forward) and its accumulating backward: one parallel vectorized pass each.
#include "kernels/ops.h"
#include "kernels/cpu/parallel.h"

namespace nanogpt::cpu {

void residual_forward(float* out, const float* a, const float* b, int64_t N) {
#pragma omp parallel for simd schedule(static) if (worth_parallel(3 * N))
  for (int64_t i = 0; i < N; ++i) out[i] = a[i] + b[i];
}

void residual_backward(float* da, float* db, const float* dout, int64_t N) {
#pragma omp parallel for simd schedule(static) if (worth_parallel(5 * N))
  for (int64_t i = 0; i < N; ++i) {
    da[i] += dout[i];
    db[i] += dout[i];
  }
}

}  // namespace nanogpt::cpu
