// KvCache: the keys and values of every layer for the tokens generated so far (per layer K, V
// (maxT, C)), plus the small scratch of a one-token forward, so GPT::forward_one costs O(t) per
// token. One cache per generated sequence; move-only (owns one Buffer).
#pragma once

#include <cstdint>

#include "core/buffer.h"
#include "model/model_config.h"

namespace nanogpt {

class KvCache {
 public:
  // max_T: longest sequence this cache holds (<= config.block_size). space: the memory it lives
  // in (the model's backend's; null: the host's).
  KvCache(const ModelConfig& config, int max_T, MemoryTracker* tracker = nullptr,
          MemorySpace* space = nullptr);

  int max_T() const { return max_T_; }
  // Number of positions filled (rows 0..length-1 of every layer are valid).
  int length() const { return length_; }
  void set_length(int length);
  void clear() { length_ = 0; }

  float* k(int layer) {
    return kv_ + (2 * static_cast<int64_t>(layer)) * max_T_ * C_;
  }  // (maxT, C)
  float* v(int layer) {
    return kv_ + (2 * static_cast<int64_t>(layer) + 1) * max_T_ * C_;
  }  // (maxT, C)

  // One-token scratch used by GPT::forward_one.
  float* x = nullptr;         // (C) residual stream
  float* x2 = nullptr;        // (C) residual stream after attention
  float* ln = nullptr;        // (C) LayerNorm output
  float* mean = nullptr;      // (1)
  float* rstd = nullptr;      // (1)
  float* qkv = nullptr;       // (3C)
  float* atty = nullptr;      // (C)
  float* proj = nullptr;      // (C)
  float* fch = nullptr;       // (4C)
  float* fch_gelu = nullptr;  // (4C)
  float* skips = nullptr;     // (n_layer / 2, C) the first blocks' outputs (unet_skips), else null

 private:
  int max_T_ = 0;
  int64_t C_ = 0;
  int length_ = 0;
  Buffer<float> arena_;
  float* kv_ = nullptr;  // (L, 2, maxT, C)
};

}  // namespace nanogpt
