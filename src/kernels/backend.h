// Backend: the one seam through which the model calls its ops (same names and arguments as
// kernels/ops.h, without the context). Today it runs the CPU kernels (cpu::) with the process's
// KernelContext; when an OpProfile is attached it also times every call and charges its FLOPs and
// bytes to the op's class (op_profile.h). A GPU backend will implement the same methods, so the
// model code (model/gpt.cpp) stays free of device specifics. The overloads taking TypedPtr are the
// mixed-precision forms (kernels/ops_lowp.h): tensors in float32, bfloat16 or float16 storage.
#pragma once

#include <cstdint>

#include "core/timer.h"
#include "kernels/op_profile.h"
#include "kernels/ops.h"
#include "kernels/ops_arch.h"
#include "kernels/ops_lowp.h"

namespace nanogpt {

class Backend {
 public:
  // profile may be null (no timing: the calls cost nothing extra).
  Backend(KernelContext& ctx, OpProfile* profile) : ctx_(ctx), profile_(profile) {}

  // The same backend charging its matmuls to `c` (the classifier's head: OpClass::kClassifier).
  Backend as(OpClass c) const {
    Backend b = *this;
    b.matmul_class_ = c;
    return b;
  }

  void encoder_forward(float* out, const int* inp, const float* wte, const float* wpe, int B, int T,
                       int C) {
    Scope s(profile_, OpClass::kElementwise, 0, 4.0 * B * T * C * 3);
    cpu::encoder_forward(out, inp, wte, wpe, B, T, C);
  }
  void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* inp, int B, int T,
                        int C) {
    Scope s(profile_, OpClass::kElementwise, 0, 4.0 * B * T * C * 5);
    cpu::encoder_backward(dwte, dwpe, dout, inp, B, T, C);
  }
  void layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                         const float* weight, const float* bias, int64_t N, int C,
                         NormKind norm = NormKind::kLayerNorm) {
    Scope s(profile_, OpClass::kNorm, 8.0 * N * C, 4.0 * N * C * 2);
    cpu::layernorm_forward(out, mean, rstd, inp, weight, bias, N, C, norm);
  }
  void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                          const float* inp, const float* weight, const float* mean,
                          const float* rstd, int64_t N, int C,
                         NormKind norm = NormKind::kLayerNorm) {
    Scope s(profile_, OpClass::kNorm, 14.0 * N * C, 4.0 * N * C * 4);
    cpu::layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C, norm);
  }
  void residual_layernorm_forward(float* res, float* out, float* mean, float* rstd, const float* a,
                                  const float* b, const float* weight, const float* bias, int64_t N,
                                  int C, NormKind norm = NormKind::kLayerNorm, float w = 1.0f) {
    Scope s(profile_, OpClass::kNorm, 9.0 * N * C, 4.0 * N * C * 4);
    cpu::residual_layernorm_forward(res, out, mean, rstd, a, b, weight, bias, N, C, norm, w);
  }
  void matmul_forward(float* out, const float* inp, const float* weight, const float* bias,
                      int64_t N, int C, int OC) {
    Scope s(profile_, matmul_class_, 2.0 * N * C * OC, 4.0 * (N * C + double(C) * OC + N * OC));
    cpu::matmul_forward(ctx_, out, inp, weight, bias, N, C, OC);
  }
  // dinp may be null.
  void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                       const float* inp, const float* weight, int64_t N, int C, int OC) {
    const double products = dinp ? 2 : 1;
    Scope s(profile_, matmul_class_, products * 2.0 * N * C * OC,
            4.0 * (N * OC + (products + 1) * (N * C + double(C) * OC)));
    cpu::matmul_backward(ctx_, dinp, dweight, dbias, dout, inp, weight, N, C, OC);
  }
  // Causal attention: QK^T and PV over the lower triangle, 2*B*T*T*C FLOPs forward (nanoGPT's
  // count), twice that backward. Through the context (which keeps the kernel's scratch).
  void attention_forward(float* out, float* lse, const float* qkv, int B, int T, int C, int NH,
                         float dropout_p, uint64_t seed) {
    Scope s(profile_, OpClass::kAttention, 2.0 * B * T * double(T) * C, 4.0 * B * T * C * 4);
    cpu::attention_forward(ctx_, TypedPtr(out), lse, ConstTypedPtr(qkv), B, T, C, NH, dropout_p,
                           seed);
  }
  void attention_backward(float* dqkv, const float* dout, const float* out, const float* lse,
                          const float* qkv, int B, int T, int C, int NH, float dropout_p,
                          uint64_t seed) {
    Scope s(profile_, OpClass::kAttention, 4.0 * B * T * double(T) * C, 4.0 * B * T * C * 8);
    cpu::attention_backward(ctx_, TypedPtr(dqkv), ConstTypedPtr(dout), ConstTypedPtr(out), lse,
                            ConstTypedPtr(qkv), B, T, C, NH, dropout_p, seed);
  }
  // attention=naive: full (T, T) products (masked entries computed too), 4*B*T*T*C FLOPs forward
  // (QK^T and PV), twice that backward; att (B, NH, T, T) written and read back.
  void attention_naive_forward(float* out, float* att, const float* qkv, int B, int T, int C,
                               int NH, float dropout_p, uint64_t seed) {
    Scope s(profile_, OpClass::kAttention, 4.0 * B * T * double(T) * C,
            4.0 * (B * T * C * 4.0 + 2.0 * B * NH * double(T) * T));
    cpu::attention_naive_forward(out, att, qkv, B, T, C, NH, dropout_p, seed);
  }
  void attention_naive_backward(float* dqkv, const float* dout, const float* att, const float* qkv,
                                int B, int T, int C, int NH, float dropout_p, uint64_t seed) {
    Scope s(profile_, OpClass::kAttention, 8.0 * B * T * double(T) * C,
            4.0 * (B * T * C * 8.0 + double(B) * NH * T * T));
    cpu::attention_naive_backward(dqkv, dout, att, qkv, B, T, C, NH, dropout_p, seed);
  }
  void attention_decode(float* out, const float* q, const float* kcache, const float* vcache, int t,
                        int C, int NH) {
    Scope s(profile_, OpClass::kAttention, 4.0 * t * C, 4.0 * 2 * t * C);
    cpu::attention_decode(out, q, kcache, vcache, t, C, NH);
  }
  void gelu_forward(float* out, const float* inp, int64_t N, MlpActivation kind) {
    Scope s(profile_, OpClass::kElementwise, 0, 4.0 * N * 2);
    cpu::gelu_forward(out, inp, N, kind);
  }
  void gelu_backward(float* dinp, const float* inp, const float* dout, int64_t N, MlpActivation kind) {
    Scope s(profile_, OpClass::kElementwise, 0, 4.0 * N * 4);
    cpu::gelu_backward(dinp, inp, dout, N, kind);
  }
  void residual_forward(float* out, const float* a, const float* b, int64_t N) {
    Scope s(profile_, OpClass::kElementwise, 0, 4.0 * N * 3);
    cpu::residual_forward(out, a, b, N);
  }
  void skip_forward(float* out, const float* x, const float* skip, float w, int64_t N) {
    Scope s(profile_, OpClass::kElementwise, 2.0 * N, 4.0 * N * 3);
    cpu::skip_forward(out, x, skip, w, N);
  }
  double skip_backward(float* dskip, const float* dout, const float* skip, float w, int64_t N) {
    Scope s(profile_, OpClass::kElementwise, 3.0 * N, 4.0 * N * 3);
    return cpu::skip_backward(dskip, dout, skip, w, N);
  }
  void dropout_forward(float* out, const float* inp, int64_t N, float p, uint64_t seed) {
    Scope s(profile_, OpClass::kElementwise, 0, 4.0 * N * 2);
    cpu::dropout_forward(out, inp, N, p, seed);
  }
  void dropout_backward(float* dinp, const float* dout, int64_t N, float p, uint64_t seed) {
    Scope s(profile_, OpClass::kElementwise, 0, 4.0 * N * 3);
    cpu::dropout_backward(dinp, dout, N, p, seed);
  }
  void dropout_backward_overwrite(float* dinp, const float* dout, int64_t N, float p,
                                  uint64_t seed) {
    Scope s(profile_, OpClass::kElementwise, 0, 4.0 * N * 2);
    cpu::dropout_backward_overwrite(dinp, dout, N, p, seed);
  }
  void crossentropy_forward(float* losses, const float* logits, const int* targets, int64_t N,
                            int V, int Vp) {
    Scope s(profile_, OpClass::kClassifier, 0, 4.0 * N * Vp);
    cpu::crossentropy_forward(losses, logits, targets, N, V, Vp);
  }
  void crossentropy_forward_backward(float* losses, float* dlogits, const float* logits,
                                     const int* targets, float dloss, int64_t N, int V, int Vp) {
    Scope s(profile_, OpClass::kClassifier, 0, 4.0 * N * Vp * 2);
    cpu::crossentropy_forward_backward(losses, dlogits, logits, targets, dloss, N, V, Vp);
  }
  // The architecture options' ops (ops_arch.h): QK-norm and rotary embeddings in one pass in place
  // on qkv's Q and K (either skipped: rstd, cos null; charged to attention), the logit soft-cap
  // (charged to the classifier).
  void qk_norm_rotary_forward(TypedPtr qkv, float* rstd, const float* cos, const float* sin,
                              int64_t N, int T, int pos0, int C, int NH, float q_gain = 1.0f) {
    Scope s(profile_, OpClass::kAttention, 6.0 * N * 2 * C,
            2.0 * dtype_size(qkv.dtype) * N * 2 * C);
    cpu::qk_norm_rotary_forward(qkv, rstd, cos, sin, N, T, pos0, C, NH, q_gain);
  }
  void qk_norm_rotary_backward(TypedPtr dqkv, ConstTypedPtr qkv, const float* rstd,
                               const float* cos, const float* sin, int64_t N, int T, int pos0,
                               int C, int NH, float q_gain = 1.0f) {
    Scope s(profile_, OpClass::kAttention, 8.0 * N * 2 * C,
            (rstd ? 3.0 : 2.0) * dtype_size(dqkv.dtype) * N * 2 * C);
    cpu::qk_norm_rotary_backward(dqkv, qkv, rstd, cos, sin, N, T, pos0, C, NH, q_gain);
  }
  void softcap_forward(float* z, int64_t N, float cap) {
    Scope s(profile_, OpClass::kClassifier, 0, 4.0 * N * 2);
    cpu::softcap_forward(z, N, cap);
  }
  void crossentropy_softcap_forward_backward(float* losses, float* dlogits, const float* logits,
                                             const int* targets, float dloss, int64_t N, int V,
                                             int Vp, float cap) {
    Scope s(profile_, OpClass::kClassifier, 0, 4.0 * N * Vp * 2);
    cpu::crossentropy_softcap_forward_backward(losses, dlogits, logits, targets, dloss, N, V, Vp,
                                               cap);
  }

  // Zeroes a gradient buffer (any dtype) before the accumulating backward ops add into it.
  void fill_zero(TypedPtr dst, int64_t n) {
    Scope s(profile_, OpClass::kElementwise, 0, double(n) * double(dtype_size(dst.dtype)));
    cpu::fill_zero(dst, n);
  }

  // Mixed precision (ops_lowp.h). Byte counts use each tensor's element size.
  void convert(TypedPtr dst, ConstTypedPtr src, int64_t n) {
    Scope s(profile_, OpClass::kElementwise, 0,
            double(n) * double(dtype_size(dst.dtype) + dtype_size(src.dtype)));
    cpu::convert(dst, src, n);
  }
  void layernorm_forward(TypedPtr out, float* mean, float* rstd, const float* inp,
                         const float* weight, const float* bias, int64_t N, int C,
                         NormKind norm = NormKind::kLayerNorm) {
    Scope s(profile_, OpClass::kNorm, 8.0 * N * C, double(N) * C * (4 + dtype_size(out.dtype)));
    cpu::layernorm_forward(ctx_, out, mean, rstd, inp, weight, bias, N, C, norm);
  }
  void residual_layernorm_forward(float* res, TypedPtr out, float* mean, float* rstd,
                                  const float* a, const float* b, const float* weight,
                                  const float* bias, int64_t N, int C,
                                  NormKind norm = NormKind::kLayerNorm, float w = 1.0f) {
    Scope s(profile_, OpClass::kNorm, 9.0 * N * C, double(N) * C * (12 + dtype_size(out.dtype)));
    cpu::residual_layernorm_forward(ctx_, res, out, mean, rstd, a, b, weight, bias, N, C, norm, w);
  }
  void layernorm_backward(float* dinp, float* dweight, float* dbias, ConstTypedPtr dout,
                          const float* inp, const float* weight, const float* mean,
                          const float* rstd, int64_t N, int C,
                         NormKind norm = NormKind::kLayerNorm) {
    Scope s(profile_, OpClass::kNorm, 14.0 * N * C, double(N) * C * (12 + dtype_size(dout.dtype)));
    cpu::layernorm_backward(ctx_, dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C, norm);
  }
  void matmul_forward(TypedPtr out, ConstTypedPtr inp, ConstTypedPtr weight, const float* bias,
                      int64_t N, int C, int OC) {
    const double e = double(dtype_size(inp.dtype));
    Scope s(profile_, matmul_class_, 2.0 * N * C * OC,
            e * (N * C + double(C) * OC) + double(dtype_size(out.dtype)) * N * OC);
    cpu::matmul_forward(ctx_, out, inp, weight, bias, N, C, OC);
  }
  void matmul_backward(TypedPtr dinp, float* dweight, float* dbias, ConstTypedPtr dout,
                       ConstTypedPtr inp, ConstTypedPtr weight, int64_t N, int C, int OC) {
    const double products = dinp ? 2 : 1, e = double(dtype_size(dout.dtype));
    Scope s(profile_, matmul_class_, products * 2.0 * N * C * OC,
            e * (N * OC + (products + 1) * (N * C + double(C) * OC)));
    cpu::matmul_backward(ctx_, dinp, dweight, dbias, dout, inp, weight, N, C, OC);
  }
  // matmul_backward with dinp (not null) overwritten, dinp = dout . weight: for an input gradient
  // that would otherwise be zero-filled first (same values). Float32 and the native bf16 matmul
  // skip the zero-fill; other dtypes zero-fill and accumulate (ops_lowp.h).
  void matmul_backward_overwrite(TypedPtr dinp, float* dweight, float* dbias, ConstTypedPtr dout,
                                 ConstTypedPtr inp, ConstTypedPtr weight, int64_t N, int C,
                                 int OC) {
    const double e = double(dtype_size(dout.dtype));
    Scope s(profile_, matmul_class_, 4.0 * N * C * OC,
            e * (N * OC + 2 * (N * C + double(C) * OC)));
    cpu::matmul_backward_overwrite(ctx_, dinp, dweight, dbias, dout, inp, weight, N, C, OC);
  }
  // The MLP's fused ops (fused=True; ops_lowp.h): charged to the matmul class with the matmul's
  // FLOPs and the bytes they move (fch and fch_gelu written; forward pre read, dpre written).
  void matmul_gelu_forward(TypedPtr fch, TypedPtr fch_gelu, ConstTypedPtr inp, ConstTypedPtr weight,
                           const float* bias, int64_t N, int C, int OC, MlpActivation kind) {
    const double e = double(dtype_size(inp.dtype));
    Scope s(profile_, matmul_class_, 2.0 * N * C * OC,
            e * (N * C + double(C) * OC) + 2.0 * dtype_size(fch.dtype) * N * OC);
    cpu::matmul_gelu_forward(ctx_, fch, fch_gelu, inp, weight, bias, N, C, OC, kind);
  }
  // Whether the fused MLP ops are one parallel region each at this shape (ops_lowp.h), so the
  // model fuses the MLP even with fused_mlp off.
  bool mlp_fusion_one_region(DType dtype, int64_t N, int C, int OC) const {
    return cpu::mlp_fusion_one_region(ctx_, dtype, N, C, OC);
  }
  void gelu_matmul_backward(TypedPtr dpre, float* dweight, float* dbias, ConstTypedPtr dout,
                            ConstTypedPtr pre, ConstTypedPtr weight, int64_t N, int C, int OC,
                            MlpActivation kind) {
    const double e = double(dtype_size(pre.dtype));
    Scope s(profile_, matmul_class_, 4.0 * N * C * OC,
            e * (N * OC + 2.0 * N * C + 2.0 * double(C) * OC));
    cpu::gelu_matmul_backward(ctx_, dpre, dweight, dbias, dout, pre, weight, N, C, OC, kind);
  }
  void attention_forward(TypedPtr out, float* lse, ConstTypedPtr qkv, int B, int T, int C, int NH,
                         float dropout_p, uint64_t seed) {
    Scope s(profile_, OpClass::kAttention, 2.0 * B * T * double(T) * C,
            double(dtype_size(qkv.dtype)) * B * T * C * 4);
    cpu::attention_forward(ctx_, out, lse, qkv, B, T, C, NH, dropout_p, seed);
  }
  void attention_backward(TypedPtr dqkv, ConstTypedPtr dout, ConstTypedPtr out, const float* lse,
                          ConstTypedPtr qkv, int B, int T, int C, int NH, float dropout_p,
                          uint64_t seed) {
    Scope s(profile_, OpClass::kAttention, 4.0 * B * T * double(T) * C,
            double(dtype_size(qkv.dtype)) * B * T * C * 8);
    cpu::attention_backward(ctx_, dqkv, dout, out, lse, qkv, B, T, C, NH, dropout_p, seed);
  }
  void gelu_forward(TypedPtr out, ConstTypedPtr inp, int64_t N, MlpActivation kind) {
    Scope s(profile_, OpClass::kElementwise, 0, double(dtype_size(inp.dtype)) * N * 2);
    cpu::gelu_forward(ctx_, out, inp, N, kind);
  }
  void gelu_backward(TypedPtr dinp, ConstTypedPtr inp, ConstTypedPtr dout, int64_t N,
                     MlpActivation kind) {
    Scope s(profile_, OpClass::kElementwise, 0, double(dtype_size(inp.dtype)) * N * 4);
    cpu::gelu_backward(ctx_, dinp, inp, dout, N, kind);
  }
  // gelu_backward with dinp overwritten (no zero-fill first; same values). Float32 and bf16 skip
  // the zero-fill; other dtypes zero-fill and accumulate (ops_lowp.h).
  void gelu_backward_overwrite(TypedPtr dinp, ConstTypedPtr inp, ConstTypedPtr dout, int64_t N,
                               MlpActivation kind) {
    Scope s(profile_, OpClass::kElementwise, 0, double(dtype_size(inp.dtype)) * N * 3);
    cpu::gelu_backward_overwrite(ctx_, dinp, inp, dout, N, kind);
  }

 private:
  // Times one call when a profile is attached.
  class Scope {
   public:
    // op: the Backend method that times itself (its name, for the profile's per-op rows).
    Scope(OpProfile* p, OpClass c, double flops, double bytes,
          const char* op = __builtin_FUNCTION())
        : p_(p), c_(c), op_(op), flops_(flops), bytes_(bytes) {}
    ~Scope() {
      if (p_) p_->add(c_, op_, timer_.seconds(), flops_, bytes_);
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    OpProfile* p_;
    OpClass c_;
    const char* op_;
    double flops_, bytes_;
    Timer timer_;
  };

  KernelContext& ctx_;
  OpProfile* profile_;
  OpClass matmul_class_ = OpClass::kMatmul;
};

}  // namespace nanogpt
