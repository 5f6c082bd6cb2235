// Where the GPU's flash attention runs (kernels/cuda/flash_attention_mma.cu): bfloat16 tensors of
// head size 64; other bfloat16 heads run attention_any_head.cu, float32 the T x T probabilities. A rule
// without CUDA, so that the GPU memory plan (model/gpu_memory_plan.h) and `estimate
// --device=cuda` apply it on any machine.
#pragma once

#include "kernels/dtype.h"

namespace nanogpt {

inline bool gpu_flash_attention_supported(DType dtype, int C, int NH) {
  return dtype == DType::kBF16 && NH > 0 && C % NH == 0 && C / NH == 64;
}

// Whether `train --device=cuda`'s attention keeps (B, NH, T) statistics rather than T x T
// probabilities: bfloat16 with heads of at most 256 (the flash kernels above, else
// kernels/cuda/attention_any_head.cu); float32 runs the T x T way (cuBLAS products).
inline bool gpu_attention_keeps_statistics(DType dtype, int C, int NH) {
  return dtype == DType::kBF16 && NH > 0 && C % NH == 0 && C / NH <= 256;
}

}  // namespace nanogpt
