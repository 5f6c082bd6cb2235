// GpuOpTimer: where a GPU training step's time goes (`train --device=cuda --profile=True`): each of
// CudaBackend's op calls is bracketed by two CUDA events on the stream, so the GPU time of every op
// is measured without stopping the queue; flush() waits for the last one and adds each op's time,
// FLOPs and bytes (kernels/op_costs.h, as every backend charges them) to an OpProfile by class and
// by name. An op that calls another op (a float32 form calling its typed form) is one op: only
// the outermost bracket counts. No CUDA header here.
#pragma once

#include <vector>

#include "kernels/op_costs.h"
#include "kernels/op_profile.h"

namespace nanogpt::cuda {

class GpuOpTimer {
 public:
  GpuOpTimer() = default;
  ~GpuOpTimer();
  GpuOpTimer(const GpuOpTimer&) = delete;
  GpuOpTimer& operator=(const GpuOpTimer&) = delete;

  // Brackets the ops queued between begin() and end(); nested brackets count as their outermost.
  // op: a string literal, the Backend method's name.
  void begin(const char* op, const op_cost::OpCost& cost);
  void end();
  // Waits for the device and moves the measured ops into `profile`.
  void flush(OpProfile& profile);

 private:
  void* event(size_t i);  // the i-th event of the pool (created on first use)
  struct Op {
    const char* name;
    op_cost::OpCost cost;
  };
  std::vector<void*> events_;  // cudaEvent_t; 2 per op since the last flush
  std::vector<Op> ops_;
  int depth_ = 0;
};

// Times the op of its scope into `timer` when `timing` (a profile is attached).
class GpuOpScope {
 public:
  GpuOpScope(GpuOpTimer& timer, bool timing, const char* op, const op_cost::OpCost& cost)
      : timer_(timing ? &timer : nullptr) {
    if (timer_) timer_->begin(op, cost);
  }
  ~GpuOpScope() {
    if (timer_) timer_->end();
  }
  GpuOpScope(const GpuOpScope&) = delete;
  GpuOpScope& operator=(const GpuOpScope&) = delete;

 private:
  GpuOpTimer* timer_;
};

}  // namespace nanogpt::cuda
