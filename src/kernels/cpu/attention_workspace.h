// AttentionWorkspace: the float32 flash attention kernel's per-thread scratch (a head's packed
// K^T, V, Q, dO, the score tiles, dQ) kept between calls, so a call reuses memory the process
// already touched: allocating and zero-filling it afresh on every call cost ~15% of the kernel's
// time at T 1024 (new pages fault in on first touch). KernelContext owns one (the model's calls go
// through it); the context-free entry points build a fresh one per call. Also the entry points
// that take one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/buffer.h"

namespace nanogpt::cpu {

class AttentionWorkspace {
 public:
  // Makes thread_block(0..threads-1) hold at least `floats` floats each (64-byte aligned). Call
  // before the parallel region; contents are whatever the last call left (zero when new).
  void reserve(int threads, size_t floats) {
    if (blocks_.size() < static_cast<size_t>(threads)) blocks_.resize(threads);
    for (int i = 0; i < threads; ++i) {
      if (blocks_[i].size() < floats) blocks_[i] = Buffer<float>(floats);
    }
  }
  float* thread_block(int i) { return blocks_[i].data(); }

 private:
  std::vector<Buffer<float>> blocks_;  // one per thread
};

// cpu::attention_forward / attention_backward (kernels/ops.h) with their scratch in ws.
void attention_forward(AttentionWorkspace& ws, float* out, float* lse, const float* qkv, int B,
                       int T, int C, int NH, float dropout_p, uint64_t seed);
void attention_backward(AttentionWorkspace& ws, float* dqkv, const float* dout, const float* out,
                        const float* lse, const float* qkv, int B, int T, int C, int NH,
                        float dropout_p, uint64_t seed);

}  // namespace nanogpt::cpu
