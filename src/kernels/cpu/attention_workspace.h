// AttentionWorkspace: the flash attention kernels' per-thread scratch (a head's packed K^T, V, Q,
// dO, the score tiles, dQ; float32 kernel attention.cpp and native bf16 kernel attention_bf16.cpp,
// whose 32-bit bf16 pairs live in the same float-sized storage) kept between calls, so a call
// reuses memory the process already touched: allocating and zero-filling it afresh on every call
// cost ~15% of the float32 kernel's time at T 1024 (new pages fault in on first touch).
// CpuBackend owns one, shared by both kernels (the model's calls go through it); the
// context-free entry points build a fresh one per call. Also the Carver that cuts a thread's block
// into pieces, and the float32 entry points that take a workspace (the bf16 ones:
// attention_bf16.h).
#pragma once

#include <algorithm>
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
  // Sets every float of every block to v (tests: NaN-poisoned scratch must not change results).
  void fill(float v) {
    for (auto& b : blocks_) std::fill(b.begin(), b.end(), v);
  }

 private:
  std::vector<Buffer<float>> blocks_;  // one per thread
};

// Hands out 64-byte aligned pieces of a thread's workspace block, in order; with a null block it
// only counts (the floats a thread needs).
class Carver {
 public:
  explicit Carver(float* block) : block_(block) {}
  float* take(size_t n) {
    float* p = block_ ? block_ + used_ : nullptr;
    used_ += (n + 15) / 16 * 16;
    return p;
  }
  size_t used() const { return used_; }

 private:
  float* block_;
  size_t used_ = 0;
};

// cpu::attention_forward / attention_backward (kernels/ops.h) with their scratch in ws.
void attention_forward(AttentionWorkspace& ws, float* out, float* lse, const float* qkv, int B,
                       int T, int C, int NH, float dropout_p, uint64_t seed);
void attention_backward(AttentionWorkspace& ws, float* dqkv, const float* dout, const float* out,
                        const float* lse, const float* qkv, int B, int T, int C, int NH,
                        float dropout_p, uint64_t seed);

}  // namespace nanogpt::cpu
