// KernelContext: what fast kernels need that must not be global: the oneDNN engine and stream, a
// cache of matmul primitives keyed by shape, the CPU target of the dispatched kernels, and the
// run's chosen kernel ways. One per process (the trainer/sampler owns it).
#pragma once

#include <memory>
#include <string>

#include "kernels/kernel_ways.h"

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

  // Which way the families of products with several run (kernels/kernel_ways.h); the defaults
  // until the run sets what it chose.
  const KernelWays& ways() const { return ways_; }
  void set_ways(const KernelWays& ways) { ways_ = ways; }

 private:
  std::unique_ptr<Impl> impl_;
  KernelWays ways_;
};

}  // namespace nanogpt
