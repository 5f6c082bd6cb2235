// KernelContext construction: creates the oneDNN CPU engine and stream (oneDNN runs on the same
// OpenMP runtime as our kernels).
#include "kernels/context.h"

#include "kernels/cpu/context_impl.h"

namespace nanogpt {

KernelContext::KernelContext() : impl_(std::make_unique<Impl>()) {}
KernelContext::~KernelContext() = default;

}  // namespace nanogpt
