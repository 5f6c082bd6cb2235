// Per-target row loops with proper reductions, shared by the dispatched kernels (layernorm.cpp,
// attention.cpp, arch.cpp): row_sum (four accumulators, then a tree across the lanes), dot,
// row_for_each (whole vectors, then one masked partial vector) and its masked load / store.
// `#pragma omp simd reduction` compiles to one accumulator whose lanes GCC then sums one by one
// through the stack: a ~60-100 cycle chain per reduction, which made W1's 128-wide LayerNorm rows
// cost ~3 ns a float. Included inside a kernel's HWY_NAMESPACE region once per target (Highway's
// per-target include guard).
#if defined(NANOGPT_KERNELS_CPU_ROW_REDUCE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NANOGPT_KERNELS_CPU_ROW_REDUCE_INL_H_
#undef NANOGPT_KERNELS_CPU_ROW_REDUCE_INL_H_
#else
#define NANOGPT_KERNELS_CPU_ROW_REDUCE_INL_H_
#endif

#include <hwy/highway.h>

#include <cstring>

HWY_BEFORE_NAMESPACE();
namespace nanogpt::cpu::HWY_NAMESPACE {
namespace row_reduce {
namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// The first `count` (< the lane count) floats at p in a vector, the other lanes zero; and the
// store of a vector's first `count` lanes. Through a stack buffer: Highway's masked loads and
// blended stores touch the whole vector on some targets (past the row's end).
HWY_INLINE VF load_part(const float* p, int count) {
  const DF d;
  HWY_ALIGN float buf[hn::MaxLanes(DF())] = {};
  std::memcpy(buf, p, static_cast<size_t>(count) * sizeof(float));
  return hn::Load(d, buf);
}
HWY_INLINE void store_part(VF v, float* p, int count) {
  const DF d;
  HWY_ALIGN float buf[hn::MaxLanes(DF())];
  hn::Store(v, d, buf);
  std::memcpy(p, buf, static_cast<size_t>(count) * sizeof(float));
}

// Sum over a row of n floats: full(c) gives lanes c..c+N-1 (all inside the row), part(c, count)
// the last, partial vector of `count` lanes with the lanes past n zero.
template <class Full, class Part>
HWY_INLINE float row_sum(int n, Full full, Part part) {
  const DF d;
  const int N = static_cast<int>(hn::Lanes(d));
  VF a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
  int c = 0;
  for (; c + 4 * N <= n; c += 4 * N) {
    a0 = hn::Add(a0, full(c));
    a1 = hn::Add(a1, full(c + N));
    a2 = hn::Add(a2, full(c + 2 * N));
    a3 = hn::Add(a3, full(c + 3 * N));
  }
  for (; c + N <= n; c += N) a0 = hn::Add(a0, full(c));
  if (c < n) a1 = hn::Add(a1, part(c, n - c));
  return hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3))));
}

// sum over i < n of a[i] * b[i].
HWY_INLINE float dot(const float* HWY_RESTRICT a, const float* HWY_RESTRICT b, int n) {
  const DF d;
  return row_sum(
      n, [&](int c) { return hn::Mul(hn::LoadU(d, a + c), hn::LoadU(d, b + c)); },
      [&](int c, int count) { return hn::Mul(load_part(a + c, count), load_part(b + c, count)); });
}

// Calls f(c, count) for c = 0, N, 2N, ... < n: count = N (the lane count) but for a partial last
// vector (n - c).
template <class F>
HWY_INLINE void row_for_each(int n, F f) {
  const DF d;
  const int N = static_cast<int>(hn::Lanes(d));
  int c = 0;
  for (; c + N <= n; c += N) f(c, N);
  if (c < n) f(c, n - c);
}

// p[c..c+count) as row_for_each gives it (the lanes past the row read as zero), and its store.
HWY_INLINE VF load_row(const float* p, int c, int count) {
  const DF d;
  return count == static_cast<int>(hn::Lanes(d)) ? hn::LoadU(d, p + c) : load_part(p + c, count);
}
HWY_INLINE void store_row(VF v, float* p, int c, int count) {
  const DF d;
  if (count == static_cast<int>(hn::Lanes(d))) {
    hn::StoreU(v, d, p + c);
  } else {
    store_part(v, p + c, count);
  }
}

}  // namespace row_reduce
}  // namespace nanogpt::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
