// The row work between the oneDNN attention's block products (attention_onednn.cpp): causal
// softmax rows of a query block (forward) and the rows of P and dS (backward), in float32 with the
// probabilities and dS rounded to bfloat16 for the next products, the dropout masks of the other
// attention kernels (attention_dims.h's mask_index, vec_math.h's dropout_keep). Compiled for every
// CPU target (attention_onednn_rows.cpp) and dispatched at run time.
#pragma once

#include <cstdint>

namespace nanogpt::cpu {

// The head and the constants every row of a call shares.
struct AttentionRowParams {
  int b = 0, h = 0;  // batch element (within the call) and head
  int NH = 1, T = 1;
  float scale = 1.0f;       // 1/sqrt(HS)
  float p = 0.0f;           // dropout probability
  float keep_scale = 1.0f;  // 1/(1-p)
  uint64_t seed = 0;
};

// Forward rows r < nq of a query block starting at query i0, against keys [0, kend): s (nq, ld)
// holds the raw scores Q K^T. Row r (query t = i0 + r) attends keys 0..t: m[r] = max of scale*s,
// l[r] = sum of e_j = exp(scale*s_j - m[r]) (undropped), and p (nq, ld, bf16 bits) = bf16(e_j *
// keep_j) for j <= t, 0 for t < j < kend.
void onednn_softmax_rows(const float* s, uint16_t* p, int64_t ld, float* m, float* l, int nq,
                         int kend, int i0, const AttentionRowParams& a);

// Backward rows of the same block: s (nq, ld) the raw scores, dp (nq, ld) = dO V^T (dropped
// probabilities' gradient), lse and delta (D_t = dout_t . out_t) indexed by query t. Writes
// pd (nq, ld, bf16) = bf16(P_j * keep_j) and ds (nq, ld, bf16) = bf16(P_j (dp_j keep_j - D_t)
// scale) for j <= t (P_j = exp(scale*s_j - lse_t)), 0 for t < j < kend.
void onednn_backward_rows(const float* s, const float* dp, int64_t ld, uint16_t* pd, uint16_t* ds,
                          const float* lse, const float* delta, int nq, int kend, int i0,
                          const AttentionRowParams& a);

}  // namespace nanogpt::cpu
