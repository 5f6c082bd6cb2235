// Fast residual add (forward) and its accumulating backward: one parallel pass each, written once
// against Highway's vectors and compiled for every CPU target (foreach_target.h re-includes this
// file per target; HWY_DYNAMIC_DISPATCH picks the one CpuTarget chose).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/residual.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>

#include "kernels/cpu/parallel.h"
#include "kernels/ops.h"

HWY_BEFORE_NAMESPACE();
namespace nanogpt::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// out (n) = a + b, serial; the caller splits the work.
inline void add_span(float* HWY_RESTRICT out, const float* HWY_RESTRICT a,
                     const float* HWY_RESTRICT b, int64_t n) {
  const hn::ScalableTag<float> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + N <= n; i += N)
    hn::StoreU(hn::Add(hn::LoadU(d, a + i), hn::LoadU(d, b + i)), d, out + i);
  for (; i < n; ++i) out[i] = a[i] + b[i];
}

// da (n) += dout, db (n) += dout, serial.
inline void accumulate_span(float* HWY_RESTRICT da, float* HWY_RESTRICT db,
                            const float* HWY_RESTRICT dout, int64_t n) {
  const hn::ScalableTag<float> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    const auto g = hn::LoadU(d, dout + i);
    hn::StoreU(hn::Add(hn::LoadU(d, da + i), g), d, da + i);
    hn::StoreU(hn::Add(hn::LoadU(d, db + i), g), d, db + i);
  }
  for (; i < n; ++i) {
    da[i] += dout[i];
    db[i] += dout[i];
  }
}

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
    accumulate_span(da + i0, db + i0, dout + i0, std::min(kSpan, N - i0));
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
