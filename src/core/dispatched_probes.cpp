// Code compiled for every CPU target and dispatched like the kernels, that says what the dispatch
// runs: dispatched_hwy_target (the name of the target HWY_DYNAMIC_DISPATCH picks now, so tests and
// --version can check that a cap took effect) and fma_probe_flops (the fp32 FMA peak probe at that
// target's vector width, so MFU under NANOGPT_CPU_TARGET=avx2 is measured against AVX2's peak).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "core/dispatched_probes.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <cstdint>

#include "core/cpu_target.h"

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

}  // namespace nanogpt::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nanogpt {

HWY_EXPORT(DispatchedTargetName);
HWY_EXPORT(FmaProbe);

std::string dispatched_hwy_target() { return HWY_DYNAMIC_DISPATCH(DispatchedTargetName)(); }

double fma_probe_flops(int64_t iters, float seed) {
  return HWY_DYNAMIC_DISPATCH(FmaProbe)(iters, seed);
}

}  // namespace nanogpt
#endif  // HWY_ONCE
