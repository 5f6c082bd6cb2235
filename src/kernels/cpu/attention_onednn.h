// Causal attention in bfloat16 whose block products are oneDNN matmul primitives (issue 30's
// "onednn" way; oneDNN runs them on AMX tiles where the CPU has them, AVX512_BF16 or AVX-512
// elsewhere), each batched over a group of a sequence's heads. Per query block of 64 rows, against
// every key the block sees at once:
//   forward:  S = Q K^T, the causal softmax rows (P rounded to bf16, unnormalized), O = P V, then
//             out = bf16(O / l), lse = m + log l;
//   backward: S = Q K^T and dP = dO V^T, the rows of P (dropped) and dS (scaled) rounded to bf16,
//             dV += P^T dO, dK += dS^T Q (float32 accumulators per head), dQ = dS K.
// The numerics of the native bf16 kernel (attention_bf16.h): probabilities and dS rounded to bf16
// before their products, statistics and accumulators in float32, each output rounded once; the
// same lse, dropout masks and accumulate-into-dqkv contract as ops.h's attention ops. Threads take
// (sequence, head group, query block) tasks in the forward and (sequence, head group) in the
// backward (dK, dV accumulate over the blocks); each executes the shared, immutable primitives
// single-threaded on its own stream and scratchpad. The primitives are made once per shape and
// kept in the CpuBackend. Head groups: as many heads per call as keep a block's score tiles
// within ~512 KiB (oneDNN's per-call overhead favours many heads per call; L2, few at long T).
#pragma once

#include <cstdint>

#include "kernels/cpu_backend.h"

namespace nanogpt::cpu {

// out (B,T,C) bf16, lse (B,NH,T); qkv (B,T,3C) bf16 (bf16 bits throughout).
void attention_forward_onednn(CpuBackend& ctx, uint16_t* out, float* lse, const uint16_t* qkv,
                              int B, int T, int C, int NH, float dropout_p, uint64_t seed);
// dqkv (B,T,3C) bf16 += the gradient (each element rounded once); dout, out (B,T,C) bf16.
void attention_backward_onednn(CpuBackend& ctx, uint16_t* dqkv, const uint16_t* dout,
                               const uint16_t* out, const float* lse, const uint16_t* qkv, int B,
                               int T, int C, int NH, float dropout_p, uint64_t seed);

}  // namespace nanogpt::cpu
