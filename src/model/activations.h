// Activations of one forward pass for N = B*T rows (kept for backward), and the scratch gradients
// of the backward pass: each set is ONE Buffer cut into named views, re-allocated only when N
// grows. Dropout outputs get their own views only when the model has dropout > 0 (else null).
#pragma once

#include <cstdint>
#include <vector>

#include "core/buffer.h"
#include "model/model_config.h"

namespace nanogpt {

struct LayerActivations {
  float* ln1 = nullptr;           // (N, C)   LayerNorm 1 output
  float* ln1_mean = nullptr;      // (N)
  float* ln1_rstd = nullptr;      // (N)
  float* qkv = nullptr;           // (N, 3C)  rows [Q | K | V]
  float* atty = nullptr;          // (N, C)   attention output (heads concatenated)
  float* lse = nullptr;           // (B, NH, T) log-sum-exp of each attention row
  float* attproj = nullptr;       // (N, C)   attention output projection
  float* attproj_drop = nullptr;  // (N, C)   dropout(attproj), null when dropout == 0
  float* residual2 = nullptr;     // (N, C)   x + attention branch
  float* ln2 = nullptr;           // (N, C)
  float* ln2_mean = nullptr;      // (N)
  float* ln2_rstd = nullptr;      // (N)
  float* fch = nullptr;           // (N, 4C)  fc output (pre-GELU)
  float* fch_gelu = nullptr;      // (N, 4C)
  float* fcproj = nullptr;        // (N, C)   MLP output projection
  float* fcproj_drop = nullptr;   // (N, C)   dropout(fcproj), null when dropout == 0
  float* residual3 = nullptr;     // (N, C)   block output
};

class Activations {
 public:
  // Makes the views valid for N = B*T rows (reallocates only when N exceeds the capacity).
  void reserve(const ModelConfig& config, int64_t N, MemoryTracker* tracker);
  int64_t capacity() const { return capacity_; }

  float* encoded = nullptr;              // (N, C)  wte[inp] + wpe[t]
  float* encoded_drop = nullptr;         // (N, C)  dropout(encoded), null when dropout == 0
  std::vector<LayerActivations> layers;  // (L)
  float* lnf = nullptr;                  // (N, C)
  float* lnf_mean = nullptr;             // (N)
  float* lnf_rstd = nullptr;             // (N)
  float* logits = nullptr;               // (N, Vp); after a training forward with targets: dlogits
  float* losses = nullptr;  // (N)      per-position loss, 0 where the target is ignored

 private:
  Buffer<float> arena_;
  int64_t capacity_ = 0;
};

// Scratch gradients of the backward pass (activation grads; parameter grads live in GPT's arena).
class GradScratch {
 public:
  void reserve(const ModelConfig& config, int64_t N, MemoryTracker* tracker);
  int64_t capacity() const { return capacity_; }

  float* dresidual = nullptr;  // (N, C)  gradient of the residual stream
  float* dc = nullptr;         // (N, C)  dln / datty / dlnf
  float* ddrop = nullptr;      // (N, C)  gradient before a dropout; null when dropout == 0
  float* dqkv = nullptr;       // (N, 3C)
  float* dfch = nullptr;       // (N, 4C)
  float* dfch_gelu = nullptr;  // (N, 4C)

 private:
  Buffer<float> arena_;
  int64_t capacity_ = 0;
};

}  // namespace nanogpt
