// KernelContext: what fast kernels need that must not be global: the oneDNN engine and stream, a
// cache of matmul primitives keyed by shape, and the CPU target of the dispatched kernels. One per
// process (the trainer/sampler owns it).
#pragma once

#include <memory>
#include <string>

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

  // The CPU target the dispatched kernels run at and the ones compiled in, e.g. "avx512_bf16
  // (compiled: baseline sse4 avx2 avx512 avx512_bf16 avx512_spr)" (core/cpu_target.h).
  std::string cpu_target_description() const;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace nanogpt
