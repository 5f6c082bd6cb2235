// The ops of GPT-2 training, declared once. Two implementations with the same signatures:
//   nanogpt::ref  (kernels/ref/): plain scalar loops, the definition of each op, used by tests;
//   nanogpt::cpu  (kernels/cpu/): fast, multithreaded (OpenMP), matmuls through oneDNN.
// Conventions (llm.c): outputs first, then inputs, then weights, then sizes. Letters: B batch,
// T time, C channels, NH heads, HS = C/NH, V vocab, Vp padded vocab, N = rows (usually B*T).
// EVERY backward kernel ACCUMULATES (+=) into all of its gradient outputs (activation and parameter
// grads alike); callers zero gradient buffers once per step. (Two fused ops overwrite one output
// each, and say so: crossentropy_forward_backward's dlogits, ops_lowp.h's gelu_matmul_backward's
// dpre.) Nullable pointers are marked.
// Dropout masks are counter-based: element i is kept iff hash_uniform(seed, i) >= p (core/rng.h),
// kept values are scaled by 1/(1-p); p == 0 means no dropout and no hashing. dropout_forward may
// run in place (out == inp).
#pragma once

#include <cstdint>

namespace nanogpt {

class CpuBackend;

// The MLP's activation. The ops that apply it keep GPT-2's names (gelu_forward, gelu_backward,
// matmul_gelu_forward, ...): kTanh and kExact are GELU's two forms (tanh approximation, erf), kRelu2
// is ReLU squared, relu(x)^2 (derivative 2 relu(x)).
enum class MlpActivation { kTanh, kExact, kRelu2 };

// The normalization of the LayerNorm ops (layernorm_*): kLayerNorm centers and scales by the
// standard deviation; kRmsNorm does not center (mean is written as 0) and scales by the root mean
// square, rstd = 1 / sqrt(mean(x^2) + eps). Both eps 1e-5, both with a gain (weight) and optional
// bias.
enum class NormKind { kLayerNorm, kRmsNorm };

#define NANOGPT_DECLARE_OPS                                                                        \
  /* out (B,T,C) = wte[inp] + wpe[t]. inp (B,T) token ids < V. wpe, dwpe nullable: no position */  \
  /* embedding (rotary positions), out = wte[inp]. */                                              \
  void encoder_forward(float* out, const int* inp, const float* wte, const float* wpe, int B,      \
                       int T, int C);                                                              \
  void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* inp, int B, int T, \
                        int C);                                                                    \
  /* LayerNorm over C, eps 1e-5. out,inp (N,C); mean,rstd (N) saved for backward; bias nullable.*/ \
  /* norm: NormKind (RMSNorm writes mean 0).                                                    */ \
  void layernorm_forward(float* out, float* mean, float* rstd, const float* inp,                   \
                         const float* weight, const float* bias, int64_t N, int C,                 \
                         NormKind norm = NormKind::kLayerNorm);                                    \
  void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,            \
                          const float* inp, const float* weight, const float* mean,                \
                          const float* rstd, int64_t N, int C,                                     \
                          NormKind norm = NormKind::kLayerNorm);                                   \
  /* Causal multi-head attention. qkv (B,T,3C) rows [Q|K|V], head h at cols h*HS..h*HS+HS-1.   */  \
  /* out (B,T,C); lse (B,NH,T) = log-sum-exp of the scaled scores of each row (for backward).  */  \
  /* Scale 1/sqrt(HS). Dropout p on the attention probabilities, element index                 */  \
  /* ((b*NH+h)*T+t)*T+s. No T x T matrix is stored between forward and backward.               */  \
  void attention_forward(float* out, float* lse, const float* qkv, int B, int T, int C, int NH,    \
                         float dropout_p, uint64_t seed);                                          \
  void attention_backward(float* dqkv, const float* dout, const float* out, const float* lse,      \
                          const float* qkv, int B, int T, int C, int NH, float dropout_p,          \
                          uint64_t seed);                                                          \
  /* One new query against a KV cache (sampling). q (C); kcache,vcache (maxT,C) rows 0..t-1    */  \
  /* valid (t >= 1, the new token's K,V already written at row t-1); out (C). No dropout.      */  \
  void attention_decode(float* out, const float* q, const float* kcache, const float* vcache,      \
                        int t, int C, int NH);                                                     \
  void gelu_forward(float* out, const float* inp, int64_t N, MlpActivation kind);                  \
  void gelu_backward(float* dinp, const float* inp, const float* dout, int64_t N,                  \
                     MlpActivation kind);                                                          \
  /* out = a + b (N). Backward is da += dout, db += dout. */                                       \
  void residual_forward(float* out, const float* a, const float* b, int64_t N);                    \
  void residual_backward(float* da, float* db, const float* dout, int64_t N);                      \
  /* U-net skip and attention gain (model/architecture.h): out = x + w * skip (N); out may     */  \
  /* alias x or skip.                                                                          */  \
  void skip_forward(float* out, const float* x, const float* skip, float w, int64_t N);            \
  /* Its backward: dskip (N) = w * dout, OVERWRITTEN (the skip source's gradient, added to the */  \
  /* stream later); returns dL/dw = sum(dout * skip), summed in double over fixed spans of     */  \
  /* 4096 elements in order (the same value on any thread count). (x's gradient is dout.)      */  \
  /* dskip may alias dout or skip (element by element, each read before it is written).        */  \
  double skip_backward(float* dskip, const float* dout, const float* skip, float w, int64_t N);    \
  void dropout_forward(float* out, const float* inp, int64_t N, float p, uint64_t seed);           \
  void dropout_backward(float* dinp, const float* dout, int64_t N, float p, uint64_t seed);        \
  /* Softmax cross-entropy over the first V of Vp columns (padding never wins, gets no grad).  */  \
  /* logits (N,Vp); targets (N), -1 = ignore (loss 0, no grad); losses (N).                    */  \
  void crossentropy_forward(float* losses, const float* logits, const int* targets, int64_t N,     \
                            int V, int Vp);                                                        \
  /* Fused: losses as above and dlogits (N,Vp) = dloss * (softmax - onehot), OVERWRITTEN (not  */  \
  /* accumulated; the one exception), padded columns 0, ignored rows 0. dlogits may alias      */  \
  /* logits (in place). dloss is the caller's scale, e.g. 1/(valid targets * accum steps).     */  \
  void crossentropy_forward_backward(float* losses, float* dlogits, const float* logits,           \
                                     const int* targets, float dloss, int64_t N, int V, int Vp);

namespace ref {
NANOGPT_DECLARE_OPS
// out (N,OC) = inp (N,C) . weight(OC,C)^T + bias (OC, nullable).
void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int64_t N,
                    int C, int OC);
void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     const float* weight, int64_t N, int C, int OC);
}  // namespace ref

namespace cpu {
NANOGPT_DECLARE_OPS
void matmul_forward(CpuBackend& ctx, float* out, const float* inp, const float* weight,
                    const float* bias, int64_t N, int C, int OC);
// dinp may be null (e.g. the embedding side of the tied head needs no input grad).
void matmul_backward(CpuBackend& ctx, float* dinp, float* dweight, float* dbias,
                     const float* dout, const float* inp, const float* weight, int64_t N, int C,
                     int OC);
// matmul_backward with dinp (not null) overwritten, dinp = dout . weight, instead of accumulated:
// for a dinp the caller would zero-fill first (same values, one pass over dinp less).
void matmul_backward_overwrite(CpuBackend& ctx, float* dinp, float* dweight, float* dbias,
                               const float* dout, const float* inp, const float* weight, int64_t N,
                               int C, int OC);
// gelu_backward with dinp overwritten, dinp = dout * gelu'(inp): same values as accumulating into
// a zero-filled dinp, one pass less.
void gelu_backward_overwrite(float* dinp, const float* inp, const float* dout, int64_t N,
                             MlpActivation kind);
// res (N, C) = a + b, then out, mean, rstd = layernorm_forward(res): the same values as
// residual_forward followed by layernorm_forward (bit-identical), in one pass (fused=True). With a
// branch weight w != 1, res = a + w * b: skip_forward(res, a, b, w) then layernorm_forward, bit
// for bit (the attention gain's residual).
void residual_layernorm_forward(float* res, float* out, float* mean, float* rstd, const float* a,
                                const float* b, const float* weight, const float* bias, int64_t N,
                                int C, NormKind norm = NormKind::kLayerNorm, float w = 1.0f);
// Naive causal attention (nanoGPT's non-flash path): same math, dropout mask and scale as
// attention_forward, but the masked softmax probabilities are materialized in att (B, NH, T, T)
// (zero above the diagonal) and kept for the backward instead of lse. Memory O(B NH T^2).
void attention_naive_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH,
                             float dropout_p, uint64_t seed);
void attention_naive_backward(float* dqkv, const float* dout, const float* att, const float* qkv,
                              int B, int T, int C, int NH, float dropout_p, uint64_t seed);
}  // namespace cpu

#undef NANOGPT_DECLARE_OPS

}  // namespace nanogpt
