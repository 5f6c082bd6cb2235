// KernelContext construction: creates the oneDNN CPU engine and stream (oneDNN runs on the same
// OpenMP runtime as our kernels) and applies the CPU target the dispatched kernels run at.
#include "kernels/context.h"

#include "kernels/backend_info.h"
#include "kernels/cpu/context_impl.h"

namespace nanogpt {

KernelContext::KernelContext() : impl_(std::make_unique<Impl>()) {
  apply_cpu_target(impl_->cpu_target);
}
KernelContext::~KernelContext() = default;

std::string KernelContext::cpu_target_description() const { return impl_->cpu_target.describe(); }

}  // namespace nanogpt
