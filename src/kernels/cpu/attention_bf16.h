// Native bfloat16 causal attention (attention_bf16.cpp): qkv, out, dout and dqkv in bf16, tile
// products on AVX512_BF16, softmax statistics and accumulators in float32. Same arguments, lse,
// dropout masks and accumulate-into-dqkv contract as ops.h's attention_forward/backward; results
// differ from the float32 kernel on widened inputs by the bf16 rounding of the probabilities and
// of dS before their products. lowp_attention.cpp takes this path when attention_bf16_native(),
// with the per-thread scratch in the CpuBackend's AttentionWorkspace (reused between calls);
// the entry points without a workspace build a fresh one per call.
#pragma once

#include <cstdint>

#include "kernels/cpu/attention_workspace.h"

namespace nanogpt::cpu {

// Whether this CPU and shape can take the native path: the dispatched target is AVX3_DL on a CPU
// with AVX512_BF16 (and NANOGPT_CPU_TARGET allows it), head size a multiple of 16 (at most 512),
// and one backward task per head at the current thread count.
bool attention_bf16_native(int B, int T, int C, int NH);

// out (B,T,C) bf16, lse (B,NH,T); qkv (B,T,3C) bf16.
void attention_forward_bf16(uint16_t* out, float* lse, const uint16_t* qkv, int B, int T, int C,
                            int NH, float dropout_p, uint64_t seed);
// dqkv (B,T,3C) bf16 += the gradient (each element rounded once); dout, out (B,T,C) bf16.
void attention_backward_bf16(uint16_t* dqkv, const uint16_t* dout, const uint16_t* out,
                             const float* lse, const uint16_t* qkv, int B, int T, int C, int NH,
                             float dropout_p, uint64_t seed);
// The same with their per-thread scratch in ws (grown to the shape and thread count, contents
// left by earlier calls, never read before written).
void attention_forward_bf16(AttentionWorkspace& ws, uint16_t* out, float* lse,
                            const uint16_t* qkv, int B, int T, int C, int NH, float dropout_p,
                            uint64_t seed);
void attention_backward_bf16(AttentionWorkspace& ws, uint16_t* dqkv, const uint16_t* dout,
                             const uint16_t* out, const float* lse, const uint16_t* qkv, int B,
                             int T, int C, int NH, float dropout_p, uint64_t seed);

}  // namespace nanogpt::cpu
