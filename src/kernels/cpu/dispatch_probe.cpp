// dispatched_hwy_target: which of the per-target copies HWY_DYNAMIC_DISPATCH runs now, by name
// (Highway's), so that tests and --version can check that a CpuTarget cap took effect.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/dispatch_probe.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "kernels/cpu/cpu_target.h"

HWY_BEFORE_NAMESPACE();
namespace nanogpt::cpu::HWY_NAMESPACE {

const char* DispatchedTargetName() { return hwy::TargetName(HWY_TARGET); }

}  // namespace nanogpt::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nanogpt::cpu {

HWY_EXPORT(DispatchedTargetName);

std::string dispatched_hwy_target() { return HWY_DYNAMIC_DISPATCH(DispatchedTargetName)(); }

}  // namespace nanogpt::cpu
#endif  // HWY_ONCE
