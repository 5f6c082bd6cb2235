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
// does it as a multiply and an add, the same 2 FLOPs).
double FmaProbe(int64_t iters, float seed) {
  const hn::ScalableTag<float> d;
  using V = hn::Vec<decltype(d)>;
  V acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = hn::Set(d, seed + static_cast<float>(i));
  const V a = hn::Set(d, 0.999999f), b = hn::Set(d, 1e-7f);
  for (int64_t it = 0; it < iters; ++it) {
    for (int i = 0; i < 12; ++i) acc[i] = hn::MulAdd(acc[i], a, b);
  }
  V sum = acc[0];
  for (int i = 1; i < 12; ++i) sum = hn::Add(sum, acc[i]);
  volatile float sink = hn::GetLane(sum);  // keeps the loop
  (void)sink;
  return static_cast<double>(iters) * 12 * static_cast<double>(hn::Lanes(d)) * 2;
}

#if HWY_ARCH_X86 && HWY_TARGET == HWY_AVX3_DL
#pragma GCC push_options
#pragma GCC target("avx512bf16")
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
#pragma GCC pop_options
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
