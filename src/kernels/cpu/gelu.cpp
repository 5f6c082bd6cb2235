// Fast GELU (tanh approximation and exact erf form), forward and accumulating backward, in
// parallel blocks of the element code of gelu_math.h.

#include <algorithm>

#include "kernels/cpu/gelu_math.h"
#include "kernels/cpu/parallel.h"
#include "kernels/ops.h"

namespace nanogpt::cpu {

namespace {
constexpr int64_t kBlock = 4096;  // elements per parallel block (a multiple of the vector width)
}  // namespace

void gelu_forward(float* out, const float* inp, int64_t N, GeluKind kind) {
  const int64_t blocks = (N + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (worth_parallel(2 * N))
  for (int64_t k = 0; k < blocks; ++k) {
    const int64_t i0 = k * kBlock;
    gelu_math::forward_serial(out + i0, inp + i0, std::min(kBlock, N - i0), kind);
  }
}

void gelu_backward(float* dinp, const float* inp, const float* dout, int64_t N, GeluKind kind) {
  const int64_t blocks = (N + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (worth_parallel(4 * N))
  for (int64_t k = 0; k < blocks; ++k) {
    const int64_t i0 = k * kBlock;
    gelu_math::backward_serial(dinp + i0, inp + i0, dout + i0, std::min(kBlock, N - i0), kind);
  }
}

}  // namespace nanogpt::cpu
