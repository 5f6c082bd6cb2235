// Fast GELU (tanh approximation and exact erf form), forward and accumulating (or overwriting)
// backward, in parallel blocks of the element code of gelu_math.h. Compiled for every CPU target
// (Highway's foreach_target.h; the element loops are vectorized by the compiler for each) and
// dispatched at run time; on ARM64 for NEON only, the fused MLP's copy of the element code
// giving the same floats (fixed_width_targets.h).
#include "kernels/cpu/fixed_width_targets.h"
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/gelu.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>

#include "kernels/cpu/gelu_math.h"
#include "kernels/cpu/parallel.h"
#include "kernels/ops.h"

HWY_BEFORE_NAMESPACE();
namespace nanogpt::cpu::HWY_NAMESPACE {
namespace {
constexpr int64_t kBlock = 4096;  // elements per parallel block (a multiple of the vector width)

template <bool kAccumulate>
void backward(float* dinp, const float* inp, const float* dout, int64_t N, MlpActivation kind) {
  const int64_t blocks = (N + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (worth_parallel(4 * N))
  for (int64_t k = 0; k < blocks; ++k) {
    const int64_t i0 = k * kBlock;
    gelu_math::backward_serial<kAccumulate>(dinp + i0, inp + i0, dout + i0,
                                            std::min(kBlock, N - i0), kind);
  }
}
}  // namespace

void GeluForward(float* out, const float* inp, int64_t N, MlpActivation kind) {
  const int64_t blocks = (N + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (worth_parallel(2 * N))
  for (int64_t k = 0; k < blocks; ++k) {
    const int64_t i0 = k * kBlock;
    gelu_math::forward_serial(out + i0, inp + i0, std::min(kBlock, N - i0), kind);
  }
}

void GeluBackward(float* dinp, const float* inp, const float* dout, int64_t N, MlpActivation kind) {
  backward<true>(dinp, inp, dout, N, kind);
}

void GeluBackwardOverwrite(float* dinp, const float* inp, const float* dout, int64_t N,
                           MlpActivation kind) {
  backward<false>(dinp, inp, dout, N, kind);
}

}  // namespace nanogpt::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nanogpt::cpu {

HWY_EXPORT(GeluForward);
HWY_EXPORT(GeluBackward);
HWY_EXPORT(GeluBackwardOverwrite);

void gelu_forward(float* out, const float* inp, int64_t N, MlpActivation kind) {
  HWY_DYNAMIC_DISPATCH(GeluForward)(out, inp, N, kind);
}

void gelu_backward(float* dinp, const float* inp, const float* dout, int64_t N, MlpActivation kind) {
  HWY_DYNAMIC_DISPATCH(GeluBackward)(dinp, inp, dout, N, kind);
}

void gelu_backward_overwrite(float* dinp, const float* inp, const float* dout, int64_t N,
                             MlpActivation kind) {
  HWY_DYNAMIC_DISPATCH(GeluBackwardOverwrite)(dinp, inp, dout, N, kind);
}

}  // namespace nanogpt::cpu
#endif  // HWY_ONCE
