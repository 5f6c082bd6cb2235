// GpuOpTimer (gpu_op_timer.h): a pool of CUDA events, two per op call since the last flush.
#include "kernels/cuda/cuda_util.cuh"
#include "kernels/cuda/gpu_op_timer.h"

namespace nanogpt::cuda {

GpuOpTimer::~GpuOpTimer() {
  for (void* e : events_) cudaEventDestroy(static_cast<cudaEvent_t>(e));
}

void* GpuOpTimer::event(size_t i) {
  while (events_.size() <= i) {
    cudaEvent_t e = nullptr;
    NANOGPT_CUDA_CHECK(cudaEventCreate(&e));
    events_.push_back(e);
  }
  return events_[i];
}

void GpuOpTimer::begin(const char* op, const op_cost::OpCost& cost) {
  if (depth_++ > 0) return;  // inside another op: part of it
  NANOGPT_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(event(2 * ops_.size())), 0));
  ops_.push_back({op, cost});
}

void GpuOpTimer::end() {
  if (--depth_ > 0) return;
  NANOGPT_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(event(2 * ops_.size() - 1)), 0));
}

void GpuOpTimer::flush(OpProfile& profile) {
  if (ops_.empty()) return;
  NANOGPT_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(event(2 * ops_.size() - 1))));
  for (size_t i = 0; i < ops_.size(); ++i) {
    float ms = 0;
    NANOGPT_CUDA_CHECK(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(events_[2 * i]),
                                            static_cast<cudaEvent_t>(events_[2 * i + 1])));
    const op_cost::OpCost& c = ops_[i].cost;
    profile.add(c.c, ops_[i].name, ms / 1e3, c.flops, c.bytes);
  }
  ops_.clear();
}

}  // namespace nanogpt::cuda
