// Fast residual add (forward) and its accumulating backward, and the U-net skip's scaled add and
// its backward (the weight's gradient summed per fixed span): one parallel pass each, written once
// against Highway's vectors and compiled for every CPU target (foreach_target.h re-includes this
// file per target; HWY_DYNAMIC_DISPATCH picks the one CpuTarget chose).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/residual.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <vector>

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

// out = x + w * skip; out may alias x or skip (each element is read before it is written).
void SkipForward(float* out, const float* x, const float* skip, float w, int64_t N) {
  const int64_t spans = (N + kSpan - 1) / kSpan;
#pragma omp parallel for schedule(static) if (worth_parallel(3 * N))
  for (int64_t k = 0; k < spans; ++k) {
    const hn::ScalableTag<float> d;
    const int64_t L = static_cast<int64_t>(hn::Lanes(d));
    const int64_t i0 = k * kSpan, i1 = std::min(N, i0 + kSpan);
    const auto wv = hn::Set(d, w);
    int64_t i = i0;
    for (; i + L <= i1; i += L) {
      hn::StoreU(hn::MulAdd(wv, hn::LoadU(d, skip + i), hn::LoadU(d, x + i)), d, out + i);
    }
    for (; i < i1; ++i) out[i] = std::fma(w, skip[i], x[i]);
  }
}

// dskip = w * dout; returns sum(dout * skip): each span's sum in float lanes, the spans' sums
// added in double in span order.
double SkipBackward(float* dskip, const float* dout, const float* skip, float w, int64_t N) {
  const int64_t spans = (N + kSpan - 1) / kSpan;
  std::vector<double> partial(static_cast<size_t>(spans));
#pragma omp parallel for schedule(static) if (worth_parallel(3 * N))
  for (int64_t k = 0; k < spans; ++k) {
    const hn::ScalableTag<float> d;
    const int64_t L = static_cast<int64_t>(hn::Lanes(d));
    const int64_t i0 = k * kSpan, i1 = std::min(N, i0 + kSpan);
    const auto wv = hn::Set(d, w);
    auto acc = hn::Zero(d);
    int64_t i = i0;
    for (; i + L <= i1; i += L) {
      const auto g = hn::LoadU(d, dout + i);
      acc = hn::MulAdd(g, hn::LoadU(d, skip + i), acc);
      hn::StoreU(hn::Mul(wv, g), d, dskip + i);
    }
    HWY_ALIGN float lanes[hn::MaxLanes(d)];  // (ReduceSum trips GCC 12's AVX-512 headers)
    hn::Store(acc, d, lanes);
    double sum = 0;
    for (int64_t j = 0; j < L; ++j) sum += static_cast<double>(lanes[j]);
    for (; i < i1; ++i) {
      sum += static_cast<double>(dout[i]) * skip[i];
      dskip[i] = w * dout[i];
    }
    partial[static_cast<size_t>(k)] = sum;
  }
  double dw = 0;
  for (double p : partial) dw += p;
  return dw;
}

}  // namespace nanogpt::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nanogpt::cpu {

HWY_EXPORT(ResidualForward);
HWY_EXPORT(ResidualBackward);
HWY_EXPORT(SkipForward);
HWY_EXPORT(SkipBackward);

void residual_forward(float* out, const float* a, const float* b, int64_t N) {
  HWY_DYNAMIC_DISPATCH(ResidualForward)(out, a, b, N);
}

void residual_backward(float* da, float* db, const float* dout, int64_t N) {
  HWY_DYNAMIC_DISPATCH(ResidualBackward)(da, db, dout, N);
}

void skip_forward(float* out, const float* x, const float* skip, float w, int64_t N) {
  HWY_DYNAMIC_DISPATCH(SkipForward)(out, x, skip, w, N);
}

double skip_backward(float* dskip, const float* dout, const float* skip, float w, int64_t N) {
  return HWY_DYNAMIC_DISPATCH(SkipBackward)(dskip, dout, skip, w, N);
}

}  // namespace nanogpt::cpu
#endif  // HWY_ONCE
