// Where the GPU's flash attention runs (kernels/cuda/flash_attention.cu): bfloat16 tensors of head
// size 64; elsewhere the GPU attention keeps its T x T probabilities (cuBLAS products). A rule
// without CUDA, so that the GPU memory plan (model/gpu_memory_plan.h) and `estimate
// --device=cuda` apply it on any machine.
#pragma once

#include "kernels/dtype.h"

namespace nanogpt {

inline bool gpu_flash_attention_supported(DType dtype, int C, int NH) {
  return dtype == DType::kBF16 && NH > 0 && C % NH == 0 && C / NH == 64;
}

}  // namespace nanogpt
