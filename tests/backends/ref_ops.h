// RefOps: the scalar reference (kernels/ref) under the Backend's method names and arguments
// (kernels/backend.h), so that one row of the op table (op_table.h) is written once and runs on
// the reference and on every backend. The Backend ops with no reference of their own are the
// reference's ops composed: an overwriting backward is a zero-fill then the accumulating one, the
// fused residual + LayerNorm is the add then the norm, the naive attention is the flash
// reference's (its probabilities are not compared, only what the model reads: out and dqkv).
// The optimizer ops' reference is RefOptimizerOps (ref_optimizer_ops.h).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/ops.h"
#include "kernels/ops_arch.h"
#include "kernels/ops_lowp.h"
#include "ref_optimizer_ops.h"

namespace nanogpt::testing {

class RefOps : public RefOptimizerOps {
 public:
  void encoder_forward(float* out, const int* inp, const float* wte, const float* wpe, int B, int T,
                       int C) {
    ref::encoder_forward(out, inp, wte, wpe, B, T, C);
  }
  void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* inp, int B, int T,
                        int C) {
    ref::encoder_backward(dwte, dwpe, dout, inp, B, T, C);
  }
  void layernorm_forward(TypedPtr out, float* mean, float* rstd, const float* inp,
                         const float* weight, const float* bias, int64_t N, int C,
                         NormKind norm = NormKind::kLayerNorm) {
    ref::layernorm_forward(out, mean, rstd, inp, weight, bias, N, C, norm);
  }
  void layernorm_backward(float* dinp, float* dweight, float* dbias, ConstTypedPtr dout,
                          const float* inp, const float* weight, const float* mean,
                          const float* rstd, int64_t N, int C,
                          NormKind norm = NormKind::kLayerNorm) {
    ref::layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C, norm);
  }
  // res = a + w * b (float32), then out = norm(res).
  void residual_layernorm_forward(float* res, TypedPtr out, float* mean, float* rstd,
                                  const float* a, const float* b, const float* weight,
                                  const float* bias, int64_t N, int C,
                                  NormKind norm = NormKind::kLayerNorm, float w = 1.0f) {
    if (w == 1.0f) {
      ref::residual_forward(res, a, b, N * C);
    } else {
      ref::skip_forward(res, a, b, w, N * C);
    }
    ref::layernorm_forward(out, mean, rstd, res, weight, bias, N, C, norm);
  }
  void matmul_forward(TypedPtr out, ConstTypedPtr inp, ConstTypedPtr weight, const float* bias,
                      int64_t N, int C, int OC) {
    ref::matmul_forward(out, inp, weight, bias, N, C, OC);
  }
  void matmul_backward(TypedPtr dinp, float* dweight, float* dbias, ConstTypedPtr dout,
                       ConstTypedPtr inp, ConstTypedPtr weight, int64_t N, int C, int OC) {
    ref::matmul_backward(dinp, dweight, dbias, dout, inp, weight, N, C, OC);
  }
  void matmul_backward_overwrite(TypedPtr dinp, float* dweight, float* dbias, ConstTypedPtr dout,
                                 ConstTypedPtr inp, ConstTypedPtr weight, int64_t N, int C,
                                 int OC) {
    ref::fill_zero(dinp, N * C);
    ref::matmul_backward(dinp, dweight, dbias, dout, inp, weight, N, C, OC);
  }
  void matmul_gelu_forward(TypedPtr fch, TypedPtr fch_gelu, ConstTypedPtr inp, ConstTypedPtr weight,
                           const float* bias, int64_t N, int C, int OC, MlpActivation kind) {
    ref::matmul_gelu_forward(fch, fch_gelu, inp, weight, bias, N, C, OC, kind);
  }
  void gelu_matmul_backward(TypedPtr dpre, float* dweight, float* dbias, ConstTypedPtr dout,
                            ConstTypedPtr pre, ConstTypedPtr weight, int64_t N, int C, int OC,
                            MlpActivation kind) {
    ref::gelu_matmul_backward(dpre, dweight, dbias, dout, pre, weight, N, C, OC, kind);
  }
  void attention_forward(TypedPtr out, float* lse, ConstTypedPtr qkv, int B, int T, int C, int NH,
                         float dropout_p, uint64_t seed) {
    ref::attention_forward(out, lse, qkv, B, T, C, NH, dropout_p, seed);
  }
  void attention_backward(TypedPtr dqkv, ConstTypedPtr dout, ConstTypedPtr out, const float* lse,
                          ConstTypedPtr qkv, int B, int T, int C, int NH, float dropout_p,
                          uint64_t seed) {
    ref::attention_backward(dqkv, dout, out, lse, qkv, B, T, C, NH, dropout_p, seed);
  }
  void attention_naive_forward(float* out, float* /*att*/, const float* qkv, int B, int T, int C,
                               int NH, float dropout_p, uint64_t seed) {
    std::vector<float> lse(static_cast<size_t>(B) * NH * T);
    ref::attention_forward(out, lse.data(), qkv, B, T, C, NH, dropout_p, seed);
  }
  void attention_naive_backward(float* dqkv, const float* dout, const float* /*att*/,
                                const float* qkv, int B, int T, int C, int NH, float dropout_p,
                                uint64_t seed) {
    std::vector<float> out(static_cast<size_t>(B) * T * C), lse(static_cast<size_t>(B) * NH * T);
    ref::attention_forward(out.data(), lse.data(), qkv, B, T, C, NH, dropout_p, seed);
    ref::attention_backward(dqkv, dout, out.data(), lse.data(), qkv, B, T, C, NH, dropout_p, seed);
  }
  void attention_decode(float* out, const float* q, const float* kcache, const float* vcache, int t,
                        int C, int NH) {
    ref::attention_decode(out, q, kcache, vcache, t, C, NH);
  }
  void gelu_forward(TypedPtr out, ConstTypedPtr inp, int64_t N, MlpActivation kind) {
    ref::gelu_forward(out, inp, N, kind);
  }
  void gelu_backward(TypedPtr dinp, ConstTypedPtr inp, ConstTypedPtr dout, int64_t N,
                     MlpActivation kind) {
    ref::gelu_backward(dinp, inp, dout, N, kind);
  }
  void gelu_backward_overwrite(TypedPtr dinp, ConstTypedPtr inp, ConstTypedPtr dout, int64_t N,
                               MlpActivation kind) {
    ref::fill_zero(dinp, N);
    ref::gelu_backward(dinp, inp, dout, N, kind);
  }
  void residual_forward(float* out, const float* a, const float* b, int64_t N) {
    ref::residual_forward(out, a, b, N);
  }
  void skip_forward(float* out, const float* x, const float* skip, float w, int64_t N) {
    ref::skip_forward(out, x, skip, w, N);
  }
  double skip_backward(float* dskip, const float* dout, const float* skip, float w, int64_t N) {
    return ref::skip_backward(dskip, dout, skip, w, N);
  }
  void dropout_forward(float* out, const float* inp, int64_t N, float p, uint64_t seed) {
    ref::dropout_forward(out, inp, N, p, seed);
  }
  void dropout_backward(float* dinp, const float* dout, int64_t N, float p, uint64_t seed) {
    ref::dropout_backward(dinp, dout, N, p, seed);
  }
  void dropout_backward_overwrite(float* dinp, const float* dout, int64_t N, float p,
                                  uint64_t seed) {
    ref::fill_zero(TypedPtr(dinp), N);
    ref::dropout_backward(dinp, dout, N, p, seed);
  }
  void crossentropy_forward(float* losses, const float* logits, const int* targets, int64_t N,
                            int V, int Vp) {
    ref::crossentropy_forward(losses, logits, targets, N, V, Vp);
  }
  void crossentropy_forward_backward(float* losses, float* dlogits, const float* logits,
                                     const int* targets, float dloss, int64_t N, int V, int Vp) {
    ref::crossentropy_forward_backward(losses, dlogits, logits, targets, dloss, N, V, Vp);
  }
  void qk_norm_rotary_forward(TypedPtr qkv, float* rstd, const float* cos, const float* sin,
                              int64_t N, int T, int pos0, int C, int NH, float q_gain = 1.0f) {
    ref::qk_norm_rotary_forward(qkv, rstd, cos, sin, N, T, pos0, C, NH, q_gain);
  }
  void qk_norm_rotary_backward(TypedPtr dqkv, ConstTypedPtr qkv, const float* rstd,
                               const float* cos, const float* sin, int64_t N, int T, int pos0,
                               int C, int NH, float q_gain = 1.0f) {
    ref::qk_norm_rotary_backward(dqkv, qkv, rstd, cos, sin, N, T, pos0, C, NH, q_gain);
  }
  void softcap_forward(float* z, int64_t N, float cap) { ref::softcap_forward(z, N, cap); }
  void crossentropy_softcap_forward_backward(float* losses, float* dlogits, const float* logits,
                                             const int* targets, float dloss, int64_t N, int V,
                                             int Vp, float cap) {
    ref::crossentropy_softcap_forward_backward(losses, dlogits, logits, targets, dloss, N, V, Vp,
                                               cap);
  }
  void fill_zero(TypedPtr dst, int64_t n) { ref::fill_zero(dst, n); }
  void convert(TypedPtr dst, ConstTypedPtr src, int64_t n) { ref::convert(dst, src, n); }
};

}  // namespace nanogpt::testing
