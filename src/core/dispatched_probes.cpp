// Code compiled for every CPU target and dispatched like the kernels, that says what the dispatch
// runs: dispatched_hwy_target (the name of the target HWY_DYNAMIC_DISPATCH picks now, so tests and
// --version can check that a cap took effect) and fma_probe_flops (the fp32 FMA peak probe at that
// target's vector width, so MFU under NANOGPT_CPU_TARGET=avx2 is measured against AVX2's peak),
// and bf16_dot_probe_flops (vdpbf16ps chains, in the AVX3_DL copy only, with AVX512_BF16 enabled
// for that function alone).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "core/dispatched_probes.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <cstdint>

#include "core/avx512bf16_region.h"
#include "core/cpu_target.h"

#if HWY_ARCH_X86
#include <immintrin.h>
#endif

HWY_BEFORE_NAMESPACE();
namespace nanogpt::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

const char* DispatchedTargetName() { return hwy::TargetName(HWY_TARGET); }

// 12 independent chains of acc = acc * a + b, `iters` times: enough chains to keep two FMA pipes
// busy through their latency. Returns the FLOPs done (2 per lane per step; a target without FMA
// does it as a multiply and an add, the same 2 FLOPs). The chains are 12 named variables, not an
// array: SVE's vectors (ScalableTag on ARM64) are sizeless types, which arrays cannot hold.
double FmaProbe(int64_t iters, float seed) {
  const hn::ScalableTag<float> d;
  using V = hn::Vec<decltype(d)>;
  auto init = [&](int i) { return hn::Set(d, seed + static_cast<float>(i)); };
  V c0 = init(0), c1 = init(1), c2 = init(2), c3 = init(3), c4 = init(4), c5 = init(5);
  V c6 = init(6), c7 = init(7), c8 = init(8), c9 = init(9), c10 = init(10), c11 = init(11);
  const V a = hn::Set(d, 0.999999f), b = hn::Set(d, 1e-7f);
  for (int64_t it = 0; it < iters; ++it) {
    c0 = hn::MulAdd(c0, a, b), c1 = hn::MulAdd(c1, a, b), c2 = hn::MulAdd(c2, a, b);
    c3 = hn::MulAdd(c3, a, b), c4 = hn::MulAdd(c4, a, b), c5 = hn::MulAdd(c5, a, b);
    c6 = hn::MulAdd(c6, a, b), c7 = hn::MulAdd(c7, a, b), c8 = hn::MulAdd(c8, a, b);
    c9 = hn::MulAdd(c9, a, b), c10 = hn::MulAdd(c10, a, b), c11 = hn::MulAdd(c11, a, b);
  }
  const V sum = hn::Add(hn::Add(hn::Add(hn::Add(c0, c1), hn::Add(c2, c3)),
                                hn::Add(hn::Add(c4, c5), hn::Add(c6, c7))),
                        hn::Add(hn::Add(c8, c9), hn::Add(c10, c11)));
  volatile float sink = hn::GetLane(sum);  // keeps the loop
  (void)sink;
  return static_cast<double>(iters) * 12 * static_cast<double>(hn::Lanes(d)) * 2;
}

#if HWY_ARCH_X86 && HWY_TARGET == HWY_AVX3_DL
NANOGPT_AVX512BF16_BEGIN
// 12 independent vdpbf16ps chains, each instruction 32 bf16 products added into 16 floats (64
// FLOPs). Returns the FLOPs done.
double Bf16DotProbe(int64_t iters, float seed) {
  __m512 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(seed + static_cast<float>(i));
  const __m512bh a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(0.999f), _mm512_set1_ps(0.998f));
  const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-7f), _mm512_set1_ps(2e-7f));
  for (int64_t it = 0; it < iters; ++it) {
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
  }
  __m512 sum = acc[0];
  for (int i = 1; i < 12; ++i) sum = _mm512_add_ps(sum, acc[i]);
  volatile float sink = _mm512_reduce_add_ps(sum);  // keeps the loop
  (void)sink;
  return static_cast<double>(iters) * 12 * 32 * 2;
}
NANOGPT_AVX512BF16_END
#else
double Bf16DotProbe(int64_t, float) { return 0; }  // no bf16 dot products at this target
#endif

}  // namespace nanogpt::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nanogpt {

HWY_EXPORT(DispatchedTargetName);
HWY_EXPORT(FmaProbe);
HWY_EXPORT(Bf16DotProbe);

std::string dispatched_hwy_target() { return HWY_DYNAMIC_DISPATCH(DispatchedTargetName)(); }

double fma_probe_flops(int64_t iters, float seed) {
  return HWY_DYNAMIC_DISPATCH(FmaProbe)(iters, seed);
}

double bf16_dot_probe_flops(int64_t iters, float seed) {
  return HWY_DYNAMIC_DISPATCH(Bf16DotProbe)(iters, seed);
}

}  // namespace nanogpt
#endif  // HWY_ONCE
