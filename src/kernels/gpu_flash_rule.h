// Where the GPU's flash attention runs (kernels/cuda/flash_attention_mma.cu): bfloat16 tensors of
// head size 64; other bfloat16 heads run attention_any_head.cu, float32 the T x T probabilities.
// A rule without CUDA, so that `train --device=cuda`'s resolution and `estimate --device=cuda`
// apply it on any machine.
#pragma once

#include "kernels/dtype.h"

namespace nanogpt {

inline bool gpu_flash_attention_supported(DType dtype, int C, int NH) {
  return dtype == DType::kBF16 && NH > 0 && C % NH == 0 && C / NH == 64;
}

}  // namespace nanogpt
