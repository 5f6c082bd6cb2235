// Fast residual add (forward) and its accumulating backward: one parallel pass each, written once
// against Highway's vectors and compiled for every CPU target (foreach_target.h re-includes this
// file per target; HWY_DYNAMIC_DISPATCH picks the one CpuTarget chose).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/residual.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>

#include "kernels/cpu/elementwise-inl.h"
#include "kernels/cpu/parallel.h"
#include "kernels/ops.h"

HWY_BEFORE_NAMESPACE();
namespace nanogpt::cpu::HWY_NAMESPACE {

constexpr int64_t kSpan = 4096;  // floats per parallel task (a multiple of every vector width)

void ResidualForward(float* out, const float* a, const float* b, int64_t N) {
  const int64_t spans = (N + kSpan - 1) / kSpan;
#pragma omp parallel for schedule(static) if (worth_parallel(3 * N))
  for (int64_t k = 0; k < spans; ++k) {
    const int64_t i0 = k * kSpan;
    add_span(out + i0, a + i0, b + i0, std::min(kSpan, N - i0));
  }
}

void ResidualBackward(float* da, float* db, const float* dout, int64_t N) {
  const int64_t spans = (N + kSpan - 1) / kSpan;
#pragma omp parallel for schedule(static) if (worth_parallel(5 * N))
  for (int64_t k = 0; k < spans; ++k) {
    const int64_t i0 = k * kSpan;
    accumulate_twice_span(da + i0, db + i0, dout + i0, std::min(kSpan, N - i0));
  }
}

}  // namespace nanogpt::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nanogpt::cpu {

HWY_EXPORT(ResidualForward);
HWY_EXPORT(ResidualBackward);

void residual_forward(float* out, const float* a, const float* b, int64_t N) {
  HWY_DYNAMIC_DISPATCH(ResidualForward)(out, a, b, N);
}

void residual_backward(float* da, float* db, const float* dout, int64_t N) {
  HWY_DYNAMIC_DISPATCH(ResidualBackward)(da, db, dout, N);
}

}  // namespace nanogpt::cpu
#endif  // HWY_ONCE
