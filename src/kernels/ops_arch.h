// The ops of the modern architecture options (model/architecture.h) beyond GPT-2's: QK-norm and
// rotary position embeddings on the q and k parts of qkv, and the tanh soft-cap of the logits.
// (RMSNorm is NormKind::kRmsNorm of the LayerNorm ops, ReLU² is MlpActivation::kRelu2 of the MLP's.)
// Two implementations with the same meaning, as in ops.h:
//   nanogpt::ref  (kernels/ref/arch.cpp): plain loops in double, the definition;
//   nanogpt::cpu  (kernels/cpu/arch.cpp): parallel, compiled per CPU target and dispatched.
// qkv (N, 3C) rows [Q | K | V], head h of Q at columns h*HS .. h*HS+HS-1, of K at C + h*HS ..;
// any dtype (TypedPtr): each head vector is widened, computed in float, rounded once. These ops
// work IN PLACE on Q and K (V untouched), and their backward ops turn the gradient with respect to
// their output into the gradient with respect to their input, in place in dqkv (not accumulated:
// the exception to ops.h's rule, like crossentropy_forward_backward).
#pragma once

#include <cstdint>

#include "kernels/dtype.h"

namespace nanogpt {

#define NANOGPT_DECLARE_ARCH_OPS                                                                  \
  /* QK-norm: each of the 2*NH head vectors v (HS) of a row becomes v * r, with               */  \
  /* r = 1 / sqrt(mean(v^2) + 1e-5) (RMSNorm without a gain); rstd (N, 2*NH) keeps r, Q's     */  \
  /* heads first.                                                                              */ \
  void qk_rmsnorm_forward(TypedPtr qkv, float* rstd, int64_t N, int C, int NH);                   \
  /* y = the forward's output as qkv holds it: g <- r * (g - y * mean(g * y)) per head vector. */ \
  /* After rotary_forward, qkv holds y rotated: run this on the gradient BEFORE                */ \
  /* rotary_backward (both then in the rotated frame, where the formula holds alike).         */  \
  void qk_rmsnorm_backward(TypedPtr dqkv, ConstTypedPtr qkv, const float* rstd, int64_t N, int C, \
                           int NH);                                                               \
  /* Rotary position embedding: row n is at position p = pos0 + n % T; each Q and K head      */  \
  /* vector's pairs (i, i + HS/2), i < HS/2, turn by the angle p * theta^(-2i/HS):            */  \
  /* (a, b) -> (a cos - b sin, a sin + b cos). cos, sin (max_T, HS/2): the angles' cosines    */  \
  /* and sines (model/rotary_table.h); HS even.                                               */  \
  void rotary_forward(TypedPtr qkv, const float* cos, const float* sin, int64_t N, int T,         \
                      int pos0, int C, int NH);                                                   \
  /* The backward: the gradient turned back (angle -p * theta^(-2i/HS)).                      */  \
  void rotary_backward(TypedPtr dqkv, const float* cos, const float* sin, int64_t N, int T,       \
                       int pos0, int C, int NH);                                                  \
  /* QK-norm then rotary in one pass over Q and K: qk_rmsnorm_forward (skipped when rstd is  */   \
  /* null) then rotary_forward (skipped when cos is null), each head vector rounded once at   */  \
  /* the end (in float32 the same values as the two ops; in 16 bits one rounding fewer).     */   \
  /* q_gain (with rstd): Q's normalized head vectors times it (v * r * q_gain; K's v * r), so */  \
  /* the attention logits are q_gain times those of unit-RMS heads (ModelConfig::qk_norm_gain).*/ \
  void qk_norm_rotary_forward(TypedPtr qkv, float* rstd, const float* cos, const float* sin,      \
                              int64_t N, int T, int pos0, int C, int NH, float q_gain = 1.0f);    \
  /* Its backward: qk_rmsnorm_backward (rstd null: skipped; qkv the fused forward's output)   */  \
  /* then rotary_backward (cos null: skipped), in place in dqkv, rounded once. With q_gain,   */  \
  /* Q's heads: g <- q_gain * r * (g - y * mean(g * y) / q_gain^2) (y = q_gain * unit head).  */  \
  void qk_norm_rotary_backward(TypedPtr dqkv, ConstTypedPtr qkv, const float* rstd,               \
                               const float* cos, const float* sin, int64_t N, int T, int pos0,    \
                               int C, int NH, float q_gain = 1.0f);                               \
  /* Logit soft-cap, in place: z (N) = cap * tanh(z / cap), cap > 0.                          */  \
  void softcap_forward(float* z, int64_t N, float cap);                                           \
  /* crossentropy_forward_backward (ops.h) of softcap_forward(logits): losses of the capped   */  \
  /* logits; dlogits (N, Vp), OVERWRITTEN (may alias logits), is the gradient with respect to */  \
  /* the raw logits: dloss * (softmax - onehot) * (1 - (capped / cap)^2).                      */ \
  void crossentropy_softcap_forward_backward(float* losses, float* dlogits, const float* logits,  \
                                             const int* targets, float dloss, int64_t N, int V,   \
                                             int Vp, float cap);

namespace ref {
NANOGPT_DECLARE_ARCH_OPS
}  // namespace ref

namespace cpu {
NANOGPT_DECLARE_ARCH_OPS
}  // namespace cpu

#undef NANOGPT_DECLARE_ARCH_OPS

}  // namespace nanogpt
