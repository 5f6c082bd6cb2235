// KernelContext: what fast kernels need that must not be global: the oneDNN engine and stream and a
// cache of matmul primitives keyed by shape. One per process (the trainer/sampler owns it).
#pragma once

#include <memory>

namespace nanogpt {

class KernelContext {
 public:
  KernelContext();
  ~KernelContext();
  KernelContext(const KernelContext&) = delete;
  KernelContext& operator=(const KernelContext&) = delete;

  // Opaque oneDNN state (engine, stream, primitive cache); defined in kernels/cpu/context_impl.h.
  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace nanogpt
