// The ops of mixed-precision training: the same ops as kernels/ops.h where some tensors are stored
// in 16 bits (TypedPtr: float32, bfloat16 or float16; compute and accumulation always in float32).
// Two implementations with the same meaning:
//   nanogpt::ref  (kernels/ref/lowp.cpp): the DEFINITION: widen the inputs to float (exact), run
//                 the float32 reference op, round each output once to its dtype (nearest even);
//                 accumulating outputs become round(old + update);
//   nanogpt::cpu  (kernels/cpu/lowp_*.cpp, convert.cpp): fast; bf16 matmuls run on oneDNN's bf16
//                 kernels (fp32 accumulation) where the CPU has them, everything else widens blocks
//                 to float32 and runs the float32 kernels (this CPU has no fp16 arithmetic).
// Statistics (LayerNorm mean/rstd, attention lse), parameter gradients, biases and the residual
// stream stay float32. Same conventions as ops.h: backward ops ACCUMULATE into their outputs.
#pragma once

#include <cstdint>

#include "kernels/dtype.h"
#include "kernels/ops.h"

namespace nanogpt {

// Batch elements per group in the 16-bit attention: with dropout > 0, the group of batch elements
// b0 .. b0 + G - 1 draws its masks from seed splitmix64(seed + b0) with batch indices counted from
// b0 (so groups see distinct masks). With every tensor float32 the op IS the float32 op of ops.h.
int attention_batch_group(int B, int NH);

namespace ref {
// dst[i] = src[i] in dst's dtype (rounded to nearest even), n elements, any dtypes.
void convert(TypedPtr dst, ConstTypedPtr src, int64_t n);
// dst (n elements, any dtype) = 0: the gradient buffers the accumulating backward ops add into.
void fill_zero(TypedPtr dst, int64_t n);
// LayerNorm with a low-precision output; inp is the float32 residual stream.
void layernorm_forward(TypedPtr out, float* mean, float* rstd, const float* inp,
                       const float* weight, const float* bias, int64_t N, int C, NormKind norm = NormKind::kLayerNorm);
void layernorm_backward(float* dinp, float* dweight, float* dbias, ConstTypedPtr dout,
                        const float* inp, const float* weight, const float* mean, const float* rstd,
                        int64_t N, int C, NormKind norm = NormKind::kLayerNorm);
void gelu_forward(TypedPtr out, ConstTypedPtr inp, int64_t N, MlpActivation kind);
void gelu_backward(TypedPtr dinp, ConstTypedPtr inp, ConstTypedPtr dout, int64_t N, MlpActivation kind);
void attention_forward(TypedPtr out, float* lse, ConstTypedPtr qkv, int B, int T, int C, int NH,
                       float dropout_p, uint64_t seed);
void attention_backward(TypedPtr dqkv, ConstTypedPtr dout, ConstTypedPtr out, const float* lse,
                        ConstTypedPtr qkv, int B, int T, int C, int NH, float dropout_p,
                        uint64_t seed);
// out (N,OC) = inp (N,C) . weight (OC,C)^T + bias (OC, float32, nullable); inp and weight of any
// dtype (products exact in float, sums in double here), out rounded once.
void matmul_forward(TypedPtr out, ConstTypedPtr inp, ConstTypedPtr weight, const float* bias,
                    int64_t N, int C, int OC);
// dinp (nullable, any dtype) += dout . weight; dweight, dbias (float32, nullable) as in ops.h.
void matmul_backward(TypedPtr dinp, float* dweight, float* dbias, ConstTypedPtr dout,
                     ConstTypedPtr inp, ConstTypedPtr weight, int64_t N, int C, int OC);
// The MLP's matmul with the GELU in its epilogue (fused=True), any dtypes as matmul_forward:
// fch (N,OC) = inp (N,C) . weight (OC,C)^T + bias, the pre-activation the backward keeps, and
// fch_gelu (N,OC) = gelu(fch) (computed from fch as stored, i.e. after its rounding): the values
// of matmul_forward then gelu_forward.
void matmul_gelu_forward(TypedPtr fch, TypedPtr fch_gelu, ConstTypedPtr inp, ConstTypedPtr weight,
                         const float* bias, int64_t N, int C, int OC, MlpActivation kind);
// The backward of out (N,OC) = gelu(pre) . weight (OC,C)^T + bias with the GELU derivative in the
// epilogue of the matmul that produces d(gelu(pre)) (fused=True): dweight (OC,C) += dout^T .
// gelu(pre) (recomputed from pre, never stored whole), dbias (OC, nullable) += column sums of
// dout, and dpre (N,C) = (dout . weight, rounded to dpre's dtype) * gelu'(pre), OVERWRITTEN (not
// accumulated, like crossentropy_forward_backward: no zeroing needed). The values of gelu_forward,
// matmul_backward into a zeroed d(gelu) and gelu_backward into a zeroed dpre (the unfused path).
void gelu_matmul_backward(TypedPtr dpre, float* dweight, float* dbias, ConstTypedPtr dout,
                          ConstTypedPtr pre, ConstTypedPtr weight, int64_t N, int C, int OC,
                          MlpActivation kind);
}  // namespace ref

// The same ops on the CPU; the context holds oneDNN's primitives and the widening scratch.
namespace cpu {
void convert(TypedPtr dst, ConstTypedPtr src, int64_t n);
void fill_zero(TypedPtr dst, int64_t n);  // in parallel chunks when large
void layernorm_forward(CpuBackend& ctx, TypedPtr out, float* mean, float* rstd,
                       const float* inp, const float* weight, const float* bias, int64_t N, int C, NormKind norm = NormKind::kLayerNorm);
void layernorm_backward(CpuBackend& ctx, float* dinp, float* dweight, float* dbias,
                        ConstTypedPtr dout, const float* inp, const float* weight,
                        const float* mean, const float* rstd, int64_t N, int C, NormKind norm = NormKind::kLayerNorm);
// res (N, C) = a + w * b (the float32 residual stream), then out (any dtype), mean, rstd =
// layernorm_forward(res): bit-identical to residual_forward (w 1) or skip_forward (w) followed by
// layernorm_forward, in one pass (fused=True).
void residual_layernorm_forward(CpuBackend& ctx, float* res, TypedPtr out, float* mean,
                                float* rstd, const float* a, const float* b, const float* weight,
                                const float* bias, int64_t N, int C,
                                NormKind norm = NormKind::kLayerNorm, float w = 1.0f);
void gelu_forward(CpuBackend& ctx, TypedPtr out, ConstTypedPtr inp, int64_t N, MlpActivation kind);
void gelu_backward(CpuBackend& ctx, TypedPtr dinp, ConstTypedPtr inp, ConstTypedPtr dout,
                   int64_t N, MlpActivation kind);
// gelu_backward with dinp OVERWRITTEN (dinp = round(dout * gelu'(inp))): the values of
// gelu_backward into a zeroed dinp, without the zero-fill (all float32: ops.h's; bf16 in
// registers; other dtypes zero-fill and accumulate).
void gelu_backward_overwrite(CpuBackend& ctx, TypedPtr dinp, ConstTypedPtr inp,
                             ConstTypedPtr dout, int64_t N, MlpActivation kind);
// dropout_backward (ops.h) with dinp OVERWRITTEN: the bits of fill_zero then dropout_backward
// (signed zeros included), without the zero-fill's pass and without reading dinp.
void dropout_backward_overwrite(float* dinp, const float* dout, int64_t N, float p, uint64_t seed);
void attention_forward(CpuBackend& ctx, TypedPtr out, float* lse, ConstTypedPtr qkv, int B,
                       int T, int C, int NH, float dropout_p, uint64_t seed);
void attention_backward(CpuBackend& ctx, TypedPtr dqkv, ConstTypedPtr dout, ConstTypedPtr out,
                        const float* lse, ConstTypedPtr qkv, int B, int T, int C, int NH,
                        float dropout_p, uint64_t seed);
void matmul_forward(CpuBackend& ctx, TypedPtr out, ConstTypedPtr inp, ConstTypedPtr weight,
                    const float* bias, int64_t N, int C, int OC);
void matmul_backward(CpuBackend& ctx, TypedPtr dinp, float* dweight, float* dbias,
                     ConstTypedPtr dout, ConstTypedPtr inp, ConstTypedPtr weight, int64_t N, int C,
                     int OC);
// matmul_backward with dinp (not null) OVERWRITTEN, dinp = round(dout . weight): the values of
// matmul_backward into a zeroed dinp, without the zero-fill or oneDNN's sum post-op reading it (on
// all float32 (ops.h's) and the native bf16 matmul; other combinations zero-fill and accumulate).
void matmul_backward_overwrite(CpuBackend& ctx, TypedPtr dinp, float* dweight, float* dbias,
                               ConstTypedPtr dout, ConstTypedPtr inp, ConstTypedPtr weight,
                               int64_t N, int C, int OC);
// The fused MLP ops above, row block by row block: each block's matmul output is still in cache
// when the GELU (forward) or the GELU derivative (backward) reads it (kernels/cpu/mlp_fused.cpp).
void matmul_gelu_forward(CpuBackend& ctx, TypedPtr fch, TypedPtr fch_gelu, ConstTypedPtr inp,
                         ConstTypedPtr weight, const float* bias, int64_t N, int C, int OC,
                         MlpActivation kind);
void gelu_matmul_backward(CpuBackend& ctx, TypedPtr dpre, float* dweight, float* dbias,
                          ConstTypedPtr dout, ConstTypedPtr pre, ConstTypedPtr weight, int64_t N,
                          int C, int OC, MlpActivation kind);
// Whether the fused MLP ops above run as one parallel region each for activations and weights of
// `dtype` and the fc's (N, C) x (C, OC) (float32 products small enough for small_gemm: nanoGPT's
// CPU recipe); the model then fuses the MLP even with fused_mlp off (it pays there: a region and a
// pass over (N, OC) saved per op, docs/benchmarks.md). The projection's backward is the transposed
// shape, which small_gemm takes alike. False where the context's small products way is oneDNN.
bool mlp_fusion_one_region(const CpuBackend& ctx, DType dtype, int64_t N, int C, int OC);
// Whether matmuls with inputs of this dtype run on native kernels here (bf16 on AVX512_BF16 / AMX
// through oneDNN) rather than widening to float32; impl_name (nullable) gets oneDNN's kernel name.
bool native_matmul(CpuBackend& ctx, DType dtype, const char** impl_name = nullptr);
}  // namespace cpu

}  // namespace nanogpt
