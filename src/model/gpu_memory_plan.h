// GpuMemoryPlan: the device bytes of training on one GPU for a config, dtype and micro-batch, by
// what holds them: the buffers of the GPU's own model (retired; checked on an H200, 17.9 GiB in
// use for GPT-2 124M at B 16, T 1024), not yet re-measured for the one model on a CudaBackend. Plain arithmetic over the parameter table, without CUDA: the GPU
// trainer prints it and checks it, and `nanogpt estimate --device=cuda` reports it on any machine.
#pragma once

#include <cstdint>

#include "kernels/dtype.h"
#include "model/model_config.h"

namespace nanogpt {

struct GpuMemoryPlan {
  int64_t params = 0;            // float32 masters + the 16-bit copy
  int64_t grads = 0;             // float32
  int64_t optimizer = 0;         // AdamW's m and v
  int64_t activations = 0;       // what forward keeps for backward, per micro-batch
  int64_t classifier = 0;        // logits and their gradient (plan_gpu_memory says which dtype)
  int64_t scratch = 0;           // backward's temporaries and the attention's scratch
  bool flash_attention = false;  // the attention keeps (B, NH, T) statistics, not T x T
  int64_t total() const { return params + grads + optimizer + activations + classifier + scratch; }
};

// naive_attention: the attention keeps its (B, NH, T, T) probabilities (cuBLAS products); else
// flash attention where it runs (kernels/gpu_flash_rule.h).
GpuMemoryPlan plan_gpu_memory(const ModelConfig& config, DType dtype, int B, int T,
                              bool naive_attention = false);

}  // namespace nanogpt
