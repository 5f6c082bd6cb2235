// What the planner's probes share (kernel_planner.cpp, small_products_planner.cpp): the context's
// ways set for one timed call and restored after, and the operands' values (xorshift noise, so
// timing never depends on the global RNG).
#pragma once

#include <cstdint>

#include "kernels/cpu_backend.h"
#include "kernels/kernel_ways.h"

namespace nanogpt {

// Sets ctx's ways for its lifetime; the ones it had come back on destruction.
class ScopedWays {
 public:
  ScopedWays(CpuBackend& ctx, const KernelWays& ways) : ctx_(ctx), saved_(ctx.ways()) {
    ctx_.set_ways(ways);
  }
  ~ScopedWays() { ctx_.set_ways(saved_); }
  ScopedWays(const ScopedWays&) = delete;
  ScopedWays& operator=(const ScopedWays&) = delete;

 private:
  CpuBackend& ctx_;
  KernelWays saved_;
};

// Uniform values in [-0.5, 0.5) from a xorshift64 stream.
class ProbeNoise {
 public:
  explicit ProbeNoise(uint64_t seed) : x_(seed) {}
  float next() {
    x_ ^= x_ << 13;
    x_ ^= x_ >> 7;
    x_ ^= x_ << 17;
    return static_cast<float>(static_cast<double>(x_ >> 11) / 9007199254740992.0 - 0.5);
  }

 private:
  uint64_t x_;
};

}  // namespace nanogpt
