// GPT-2's ops on an NVIDIA GPU (namespace nanogpt::cuda): the device twins of kernels/ops.h, each
// tested against the scalar reference (kernels/ref, tests/cuda/). Every pointer is a DEVICE
// pointer; work is queued on the default stream (asynchronous: call CudaContext::synchronize() to
// wait and surface errors). Letters as in ops.h: N rows, C channels, OC output channels, B batch,
// T time, NH heads, HS = C / NH, V vocab, Vp padded vocab.
// Storage: tensors passed as TypedPtr are float32 or bfloat16 (the run's activation dtype);
// statistics (mean, rstd, losses), the residual stream and every parameter gradient are float32.
// Compute is float32 throughout (matmuls accumulate in float32).
// Gradient convention (differs from ops.h, stated per op): PARAMETER gradients ACCUMULATE (+=),
// ACTIVATION gradients are OVERWRITTEN (=) unless the op says it adds.
// Dropout masks are those of the CPU (core/rng.h): element i kept iff hash_uniform(seed, i) >= p,
// kept values scaled by 1/(1-p); p == 0: no dropout.
// This header includes no CUDA header.
#pragma once

#include <cstdint>

#include "kernels/cuda/cuda_context.h"
#include "kernels/dtype.h"
#include "kernels/ops.h"

namespace nanogpt::cuda {

// ---- embeddings, norms, elementwise (elementwise.cu, layernorm.cu, encoder.cu) ----

// out (B,T,C) = wte[inp] + wpe[t] (wpe nullable: no position embedding). inp (B,T) ids < V.
void encoder_forward(float* out, const int* inp, const float* wte, const float* wpe, int B, int T,
                     int C);
// dwte[inp[b,t]] += dout[b,t]; dwpe[t] += sum_b dout[b,t] (dwpe nullable). Deterministic.
void encoder_backward(CudaContext& ctx, float* dwte, float* dwpe, const float* dout, const int* inp,
                      int B, int T, int C);

// out (N,C) = norm(inp) * weight + bias (bias nullable), eps 1e-5; mean, rstd (N) saved (RMSNorm
// writes mean 0). out is float32 or bfloat16.
void layernorm_forward(TypedPtr out, float* mean, float* rstd, const float* inp,
                       const float* weight, const float* bias, int64_t N, int C, NormKind norm);
// res (N,C) = a + b (float32), then out = layernorm(res) as above.
void residual_layernorm_forward(float* res, TypedPtr out, float* mean, float* rstd, const float* a,
                                const float* b, const float* weight, const float* bias, int64_t N,
                                int C, NormKind norm);
// dinp (N,C) += d/dinp (ADDS: it is the residual stream's gradient); dweight, dbias (C) +=
// (dbias nullable). dout float32 or bfloat16. Deterministic (no atomics on dweight / dbias).
// dinp_copy (nullable; N x C in dout's dtype, may be dout itself): the updated dinp converted, for
// the next branch's backward (saves a pass over dinp).
void layernorm_backward(CudaContext& ctx, float* dinp, float* dweight, float* dbias,
                        ConstTypedPtr dout, const float* inp, const float* weight,
                        const float* mean, const float* rstd, int64_t N, int C, NormKind norm,
                        TypedPtr dinp_copy = {});

// out = act(inp), N elements (GELU tanh / erf, or ReLU squared); out may alias inp.
void gelu_forward(TypedPtr out, ConstTypedPtr inp, int64_t N, MlpActivation kind);
// dinp = act'(inp) * dout (overwrite; dinp may alias dout).
void gelu_backward(TypedPtr dinp, ConstTypedPtr inp, ConstTypedPtr dout, int64_t N,
                   MlpActivation kind);

// out (N) = a + b, float32.
void residual_forward(float* out, const float* a, const float* b, int64_t N);
// acc (N) += x (x float32 or bfloat16).
void add_inplace(float* acc, ConstTypedPtr x, int64_t N);
// out = dropout(inp) (may run in place); dinp = dropout'(dout) (overwrite; may alias).
void dropout_forward(TypedPtr out, ConstTypedPtr inp, int64_t N, float p, uint64_t seed);
void dropout_backward(TypedPtr dinp, ConstTypedPtr dout, int64_t N, float p, uint64_t seed);

// dst (n) = src (n) converted (float32 <-> bfloat16, round to nearest even); same dtype: a copy.
void convert(TypedPtr dst, ConstTypedPtr src, int64_t n);
// x (n) *= s.
void scale(float* x, float s, int64_t n);

// ---- classifier (crossentropy.cu) ----

// Per row n of logits (N, Vp) (float32 or bfloat16; columns >= V ignored): losses[n] = -log
// softmax[target]; dlogits[n, j] = dloss * (softmax[j] - [j == target]) for j < V, 0 for
// V <= j < Vp (overwrite; float32 or bfloat16; it may be the logits buffer itself when of the
// logits' dtype: the gradient then replaces them). targets[n] == -1: ignored row, loss 0 and
// dlogits 0. dlogits nullable (forward only).
void crossentropy_forward_backward(float* losses, TypedPtr dlogits, ConstTypedPtr logits,
                                   const int* targets, float dloss, int64_t N, int V, int Vp);

// ---- the architecture options beyond GPT-2 (arch.cu; meanings as kernels/ops_arch.h) ----

// QK-norm in place on qkv's Q and K head vectors (float32 or bfloat16); rstd (N, 2*NH) float32.
void qk_rmsnorm_forward(TypedPtr qkv, float* rstd, int64_t N, int C, int NH);
// In place on dqkv's Q and K parts (y = the forward's output as qkv holds it).
void qk_rmsnorm_backward(TypedPtr dqkv, ConstTypedPtr qkv, const float* rstd, int64_t N, int C,
                         int NH);
// Rotary embeddings in place on Q and K; cos, sin (max_T, HS/2) float32 on the device; row n at
// position pos0 + n % T.
void rotary_forward(TypedPtr qkv, const float* cos, const float* sin, int64_t N, int T, int pos0,
                    int C, int NH);
void rotary_backward(TypedPtr dqkv, const float* cos, const float* sin, int64_t N, int T, int pos0,
                     int C, int NH);
// Logit soft-cap in place: z (n) = cap * tanh(z / cap) (float32).
void softcap_forward(float* z, int64_t n, float cap);
// crossentropy_forward_backward of the soft-capped logits (raw logits in, float32): losses of the
// capped logits; dlogits (N, Vp; float32 or bfloat16; overwrite; not aliasing logits; nullable) the
// gradient with respect to the RAW logits, dloss * (softmax - onehot) * (1 - (capped / cap)^2), 0
// in the padding columns and ignored rows.
void crossentropy_softcap_forward_backward(float* losses, TypedPtr dlogits, const float* logits,
                                           const int* targets, float dloss, int64_t N, int V,
                                           int Vp, float cap);

// ---- optimizer (adamw.cu) ----

// One AdamW step on n elements, the same arithmetic as optim/adamw.cpp (torch.optim.AdamW):
// g = grads * grad_scale; params -= lr * weight_decay * params; m = beta1 m + (1-beta1) g;
// v = beta2 v + (1-beta2) g^2; params -= lr * (m / (1-beta1^step)) / (sqrt(v / (1-beta2^step)) +
// eps). params_lowp (nullable) gets round(params) in its dtype (bfloat16). step counts from 1.
struct AdamWArgs {
  float lr = 0, beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f, weight_decay = 0, grad_scale = 1;
  int64_t step = 1;
};
void adamw_update(float* params, TypedPtr params_lowp, float* m, float* v, const float* grads,
                  int64_t n, const AdamWArgs& args);

// Sum of squares of x (n) in float64 on the host (waits for the device). Deterministic.
double sum_squares(CudaContext& ctx, const float* x, int64_t n);

// ---- matmuls (matmul.cu, through cuBLASLt) ----

// out (N, OC) = inp (N, C) @ weight (OC, C)^T + bias (OC; nullable); inp and weight of one dtype
// (float32: TF32 when ctx.allow_tf32(); bfloat16); out float32 or the inputs' dtype; bias of
// out's dtype. accumulate: out += instead of = (no bias then).
void matmul_forward(CudaContext& ctx, TypedPtr out, ConstTypedPtr inp, ConstTypedPtr weight,
                    ConstTypedPtr bias, int64_t N, int C, int OC, bool accumulate = false);
// dinp (N, C) = dout (N, OC) @ weight (OC, C) (overwrite; nullable; dtype of dout);
// dweight (OC, C) += dout^T @ inp (float32); dbias (OC) += column sums of dout (nullable).
// dout, inp and weight of one dtype.
void matmul_backward(CudaContext& ctx, TypedPtr dinp, float* dweight, float* dbias,
                     ConstTypedPtr dout, ConstTypedPtr inp, ConstTypedPtr weight, int64_t N, int C,
                     int OC);
// The MLP's first product and its activation: pre (N, OC) = inp @ weight^T + bias, act (N, OC) =
// kind(pre), act, pre and inp of one dtype. With fuse, tanh GELU and bfloat16, in cuBLASLt's
// GELU_AUX(_BIAS) epilogue (GELU on the float32 sum, then rounded; pre rounded apart); otherwise
// matmul_forward then gelu_forward.
void matmul_gelu_forward(CudaContext& ctx, TypedPtr act, TypedPtr pre, ConstTypedPtr inp,
                         ConstTypedPtr weight, ConstTypedPtr bias, int64_t N, int C, int OC,
                         MlpActivation kind, bool fuse);
// matmul_backward of the MLP's second product (inp = act above), dinp then multiplied by
// kind'(pre) (pre (N, C), dinp's dtype): with fuse, tanh GELU and bfloat16 in cuBLASLt's DGELU
// epilogue (on the float32 product, then rounded); otherwise by gelu_backward after the product.
void matmul_gelu_backward(CudaContext& ctx, TypedPtr dinp, float* dweight, float* dbias,
                          ConstTypedPtr dout, ConstTypedPtr inp, ConstTypedPtr weight, int64_t N,
                          int C, int OC, ConstTypedPtr pre, MlpActivation kind, bool fuse);

// ---- attention (attention.cu) ----

// Causal multi-head attention as in ops.h: qkv (B,T,3C) rows [Q|K|V]; out (B,T,C); scale
// 1/sqrt(HS); dropout p on the probabilities, element index ((b*NH+h)*T+t)*T+s. att (B,NH,T,T)
// keeps the probabilities (before dropout) for backward. All of qkv, out, att of one dtype.
// Borrows ctx.scratch(attention_scratch_bytes(...)).
size_t attention_scratch_bytes(int B, int T, int C, int NH, DType dtype);
void attention_forward(CudaContext& ctx, TypedPtr out, TypedPtr att, ConstTypedPtr qkv, int B,
                       int T, int C, int NH, float dropout_p, uint64_t seed);
// dqkv (B,T,3C) = gradient (overwrite) from dout (B,T,C), att and qkv of the forward.
void attention_backward(CudaContext& ctx, TypedPtr dqkv, ConstTypedPtr dout, ConstTypedPtr att,
                        ConstTypedPtr qkv, int B, int T, int C, int NH, float dropout_p,
                        uint64_t seed);

// One new query against a KV cache (sampling; attention_decode.cu): q (C) and the cache rows
// kcache, vcache (maxT, C), rows 0..t-1 valid (t >= 1), out (C); all of one dtype. Borrows
// ctx.scratch for the NH x t scores.
void attention_decode(CudaContext& ctx, TypedPtr out, ConstTypedPtr q, ConstTypedPtr kcache,
                      ConstTypedPtr vcache, int t, int C, int NH);

// Flash attention (flash_attention.cu): the same causal attention without any T x T matrix in
// memory, on the tensor cores, for bfloat16 tensors of head size 64 (flash_attention_supported).
// lse (B, NH, T) float32: the log-sum-exp of each row's scaled scores, kept for backward. Dropout
// masks as attention_forward's for bfloat16 (per group of sequences, ops_lowp.h). Backward:
// dqkv (overwrite) from dout, out and lse of the forward; deterministic (no atomics).
bool flash_attention_supported(DType dtype, int C, int NH);
void flash_attention_forward(CudaContext& ctx, TypedPtr out, float* lse, ConstTypedPtr qkv, int B,
                             int T, int C, int NH, float dropout_p, uint64_t seed);
void flash_attention_backward(CudaContext& ctx, TypedPtr dqkv, ConstTypedPtr dout,
                              ConstTypedPtr out, const float* lse, ConstTypedPtr qkv, int B, int T,
                              int C, int NH, float dropout_p, uint64_t seed);
// The same op for any head size up to 256 in float32 or bfloat16 (attention_any_head.cu: a warp a
// row, no tensor cores; for the shapes flash_attention_supported does not take). The backward
// OVERWRITES dqkv's q, k and v parts; delta: (B, NH, T) floats of scratch.
bool attention_any_head_supported(int C, int NH);
void attention_any_head_forward(TypedPtr out, float* lse, ConstTypedPtr qkv, int B, int T, int C,
                                int NH, float dropout_p, uint64_t seed);
void attention_any_head_backward(TypedPtr dqkv, float* delta, ConstTypedPtr dout,
                                 ConstTypedPtr out, const float* lse, ConstTypedPtr qkv, int B,
                                 int T, int C, int NH, float dropout_p, uint64_t seed);
// The same op on mma.sync fragments (flash_attention_mma.cu: register-level tensor-core code,
// ldmatrix, cp.async double buffering): CudaBackend's flash attention. Same arguments, results and
// determinism as flash_attention_forward / flash_attention_backward, under the same
// flash_attention_supported rule; out and dqkv must be 16-byte aligned too.
void flash_attention_forward_mma(CudaContext& ctx, TypedPtr out, float* lse, ConstTypedPtr qkv,
                                 int B, int T, int C, int NH, float dropout_p, uint64_t seed);
void flash_attention_backward_mma(CudaContext& ctx, TypedPtr dqkv, ConstTypedPtr dout,
                                  ConstTypedPtr out, const float* lse, ConstTypedPtr qkv, int B,
                                  int T, int C, int NH, float dropout_p, uint64_t seed);

}  // namespace nanogpt::cuda
