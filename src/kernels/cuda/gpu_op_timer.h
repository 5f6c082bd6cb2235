// GpuOpTimer: where a GPU training step's time goes (`train --device=cuda --profile=True`): each op
// call is bracketed by two CUDA events on the stream, so the GPU time of every op is measured
// without stopping the queue; flush() waits for the step and adds each op's time, FLOPs and bytes
// to an OpProfile by class (kernels/op_profile.h). No CUDA header here.
#pragma once

#include <vector>

#include "kernels/op_profile.h"

namespace nanogpt::cuda {

class GpuOpTimer {
 public:
  GpuOpTimer() = default;
  ~GpuOpTimer();
  GpuOpTimer(const GpuOpTimer&) = delete;
  GpuOpTimer& operator=(const GpuOpTimer&) = delete;

  // Brackets the ops queued between begin() and end() (not nested).
  void begin(OpClass c, double flops, double bytes);
  void end();
  // Waits for the device and moves the measured ops into `profile`.
  void flush(OpProfile& profile);

 private:
  void* event(size_t i);  // the i-th event of the pool (created on first use)
  struct Op {
    OpClass c;
    double flops, bytes;
  };
  std::vector<void*> events_;  // cudaEvent_t; 2 per op of the current step
  std::vector<Op> ops_;
};

// Times the ops queued in its scope when `timer` is not null.
class GpuOpScope {
 public:
  GpuOpScope(GpuOpTimer* timer, OpClass c, double flops, double bytes) : timer_(timer) {
    if (timer_) timer_->begin(c, flops, bytes);
  }
  ~GpuOpScope() {
    if (timer_) timer_->end();
  }
  // Ends this op and begins the next one (a run of consecutive ops in one scope).
  void next(OpClass c, double flops, double bytes) {
    if (!timer_) return;
    timer_->end();
    timer_->begin(c, flops, bytes);
  }
  GpuOpScope(const GpuOpScope&) = delete;
  GpuOpScope& operator=(const GpuOpScope&) = delete;

 private:
  GpuOpTimer* timer_;
};

}  // namespace nanogpt::cuda
