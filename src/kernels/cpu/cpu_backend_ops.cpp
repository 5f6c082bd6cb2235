// CpuBackend's ops (kernels/cpu_backend.h): each calls its cpu:: kernel (kernels/ops.h,
// ops_arch.h, ops_lowp.h), timed into the attached OpProfile with the FLOPs and bytes it is charged:
// the useful floating-point operations and the least bytes the op must move.
#include <cstdint>

#include "core/timer.h"
#include "kernels/cpu_backend.h"
#include "kernels/op_costs.h"

namespace nanogpt {

namespace {

// Times one call when a profile is attached.
class Scope {
 public:
  // op: the Backend method that times itself (its name, for the profile's per-op rows).
  Scope(OpProfile* p, const op_cost::OpCost& cost, const char* op = __builtin_FUNCTION())
      : p_(p), c_(cost.c), op_(op), flops_(cost.flops), bytes_(cost.bytes) {}
  // A matmul charged to the backend's matmul class (kernel ways: small products count apart).
  Scope(OpProfile* p, OpClass c, const op_cost::OpCost& cost,
        const char* op = __builtin_FUNCTION())
      : p_(p), c_(c), op_(op), flops_(cost.flops), bytes_(cost.bytes) {}
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

}  // namespace

void CpuBackend::encoder_forward(float* out, const int* inp, const float* wte, const float* wpe, int B, int T, int C) {
  Scope s(profile_, op_cost::encoder_forward(B, T, C));
  cpu::encoder_forward(out, inp, wte, wpe, B, T, C);
}

void CpuBackend::encoder_backward(float* dwte, float* dwpe, const float* dout, const int* inp, int B, int T, int C) {
  Scope s(profile_, op_cost::encoder_backward(B, T, C));
  cpu::encoder_backward(dwte, dwpe, dout, inp, B, T, C);
}

void CpuBackend::layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias, int64_t N, int C, NormKind norm) {
  Scope s(profile_, op_cost::layernorm_forward(N, C));
  cpu::layernorm_forward(out, mean, rstd, inp, weight, bias, N, C, norm);
}

void CpuBackend::layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp, const float* weight, const float* mean, const float* rstd, int64_t N, int C, NormKind norm) {
  Scope s(profile_, op_cost::layernorm_backward(N, C));
  cpu::layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C, norm);
}

void CpuBackend::residual_layernorm_forward(float* res, float* out, float* mean, float* rstd, const float* a, const float* b, const float* weight, const float* bias, int64_t N, int C, NormKind norm, float w) {
  Scope s(profile_, op_cost::residual_layernorm_forward(N, C));
  cpu::residual_layernorm_forward(res, out, mean, rstd, a, b, weight, bias, N, C, norm, w);
}

void CpuBackend::matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int64_t N, int C, int OC) {
  Scope s(profile_, matmul_class_, op_cost::matmul_forward(N, C, OC));
  cpu::matmul_forward(*this, out, inp, weight, bias, N, C, OC);
}

void CpuBackend::matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp, const float* weight, int64_t N, int C, int OC) {
  Scope s(profile_, matmul_class_, op_cost::matmul_backward(N, C, OC, dinp != nullptr));
  cpu::matmul_backward(*this, dinp, dweight, dbias, dout, inp, weight, N, C, OC);
}

void CpuBackend::attention_forward(float* out, float* lse, const float* qkv, int B, int T, int C, int NH, float dropout_p, uint64_t seed) {
  Scope s(profile_, op_cost::attention_forward(B, T, C));
  cpu::attention_forward(*this, TypedPtr(out), lse, ConstTypedPtr(qkv), B, T, C, NH, dropout_p,
                         seed);
}

void CpuBackend::attention_backward(float* dqkv, const float* dout, const float* out, const float* lse, const float* qkv, int B, int T, int C, int NH, float dropout_p, uint64_t seed) {
  Scope s(profile_, op_cost::attention_backward(B, T, C));
  cpu::attention_backward(*this, TypedPtr(dqkv), ConstTypedPtr(dout), ConstTypedPtr(out), lse,
                          ConstTypedPtr(qkv), B, T, C, NH, dropout_p, seed);
}

void CpuBackend::attention_naive_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH, float dropout_p, uint64_t seed) {
  Scope s(profile_, op_cost::attention_naive_forward(B, T, C, NH));
  cpu::attention_naive_forward(out, att, qkv, B, T, C, NH, dropout_p, seed);
}

void CpuBackend::attention_naive_backward(float* dqkv, const float* dout, const float* att, const float* qkv, int B, int T, int C, int NH, float dropout_p, uint64_t seed) {
  Scope s(profile_, op_cost::attention_naive_backward(B, T, C, NH));
  cpu::attention_naive_backward(dqkv, dout, att, qkv, B, T, C, NH, dropout_p, seed);
}

void CpuBackend::attention_decode(float* out, const float* q, const float* kcache, const float* vcache, int t, int C, int NH) {
  Scope s(profile_, op_cost::attention_decode(t, C));
  cpu::attention_decode(out, q, kcache, vcache, t, C, NH);
}

void CpuBackend::gelu_forward(float* out, const float* inp, int64_t N, MlpActivation kind) {
  Scope s(profile_, op_cost::gelu_forward(N));
  cpu::gelu_forward(out, inp, N, kind);
}

void CpuBackend::gelu_backward(float* dinp, const float* inp, const float* dout, int64_t N, MlpActivation kind) {
  Scope s(profile_, op_cost::gelu_backward(N));
  cpu::gelu_backward(dinp, inp, dout, N, kind);
}

void CpuBackend::residual_forward(float* out, const float* a, const float* b, int64_t N) {
  Scope s(profile_, op_cost::residual_forward(N));
  cpu::residual_forward(out, a, b, N);
}

void CpuBackend::skip_forward(float* out, const float* x, const float* skip, float w, int64_t N) {
  Scope s(profile_, op_cost::skip_forward(N));
  cpu::skip_forward(out, x, skip, w, N);
}

double CpuBackend::skip_backward(float* dskip, const float* dout, const float* skip, float w, int64_t N) {
  Scope s(profile_, op_cost::skip_backward(N));
  return cpu::skip_backward(dskip, dout, skip, w, N);
}

void CpuBackend::dropout_forward(float* out, const float* inp, int64_t N, float p, uint64_t seed) {
  Scope s(profile_, op_cost::dropout_forward(N));
  cpu::dropout_forward(out, inp, N, p, seed);
}

void CpuBackend::dropout_backward(float* dinp, const float* dout, int64_t N, float p, uint64_t seed) {
  Scope s(profile_, op_cost::dropout_backward(N));
  cpu::dropout_backward(dinp, dout, N, p, seed);
}

void CpuBackend::dropout_backward_overwrite(float* dinp, const float* dout, int64_t N, float p, uint64_t seed) {
  Scope s(profile_, op_cost::dropout_backward_overwrite(N));
  cpu::dropout_backward_overwrite(dinp, dout, N, p, seed);
}

void CpuBackend::crossentropy_forward(float* losses, const float* logits, const int* targets, int64_t N, int V, int Vp) {
  Scope s(profile_, op_cost::crossentropy_forward(N, Vp));
  cpu::crossentropy_forward(losses, logits, targets, N, V, Vp);
}

void CpuBackend::crossentropy_forward_backward(float* losses, float* dlogits, const float* logits, const int* targets, float dloss, int64_t N, int V, int Vp) {
  Scope s(profile_, op_cost::crossentropy_forward_backward(N, Vp));
  cpu::crossentropy_forward_backward(losses, dlogits, logits, targets, dloss, N, V, Vp);
}

void CpuBackend::qk_norm_rotary_forward(TypedPtr qkv, float* rstd, const float* cos, const float* sin, int64_t N, int T, int pos0, int C, int NH, float q_gain) {
  Scope s(profile_, op_cost::qk_norm_rotary_forward(N, C, qkv.dtype));
  cpu::qk_norm_rotary_forward(qkv, rstd, cos, sin, N, T, pos0, C, NH, q_gain);
}

void CpuBackend::qk_norm_rotary_backward(TypedPtr dqkv, ConstTypedPtr qkv, const float* rstd, const float* cos, const float* sin, int64_t N, int T, int pos0, int C, int NH, float q_gain) {
  Scope s(profile_, op_cost::qk_norm_rotary_backward(N, C, dqkv.dtype, rstd != nullptr));
  cpu::qk_norm_rotary_backward(dqkv, qkv, rstd, cos, sin, N, T, pos0, C, NH, q_gain);
}

void CpuBackend::softcap_forward(float* z, int64_t N, float cap) {
  Scope s(profile_, op_cost::softcap_forward(N));
  cpu::softcap_forward(z, N, cap);
}

void CpuBackend::crossentropy_softcap_forward_backward(float* losses, float* dlogits, const float* logits, const int* targets, float dloss, int64_t N, int V, int Vp, float cap) {
  Scope s(profile_, op_cost::crossentropy_softcap_forward_backward(N, Vp));
  cpu::crossentropy_softcap_forward_backward(losses, dlogits, logits, targets, dloss, N, V, Vp,
                                             cap);
}

void CpuBackend::fill_zero(TypedPtr dst, int64_t n) {
  Scope s(profile_, op_cost::fill_zero(n, dst.dtype));
  cpu::fill_zero(dst, n);
}

void CpuBackend::convert(TypedPtr dst, ConstTypedPtr src, int64_t n) {
  Scope s(profile_, op_cost::convert(n, dst.dtype, src.dtype));
  cpu::convert(dst, src, n);
}

void CpuBackend::layernorm_forward(TypedPtr out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias, int64_t N, int C, NormKind norm) {
  Scope s(profile_, op_cost::layernorm_forward(N, C, out.dtype));
  cpu::layernorm_forward(*this, out, mean, rstd, inp, weight, bias, N, C, norm);
}

void CpuBackend::residual_layernorm_forward(float* res, TypedPtr out, float* mean, float* rstd, const float* a, const float* b, const float* weight, const float* bias, int64_t N, int C, NormKind norm, float w) {
  Scope s(profile_, op_cost::residual_layernorm_forward(N, C, out.dtype));
  cpu::residual_layernorm_forward(*this, res, out, mean, rstd, a, b, weight, bias, N, C, norm, w);
}

void CpuBackend::layernorm_backward(float* dinp, float* dweight, float* dbias, ConstTypedPtr dout, const float* inp, const float* weight, const float* mean, const float* rstd, int64_t N, int C, NormKind norm) {
  Scope s(profile_, op_cost::layernorm_backward(N, C, dout.dtype));
  cpu::layernorm_backward(*this, dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C, norm);
}

void CpuBackend::matmul_forward(TypedPtr out, ConstTypedPtr inp, ConstTypedPtr weight, const float* bias, int64_t N, int C, int OC) {
  Scope s(profile_, matmul_class_, op_cost::matmul_forward(N, C, OC, inp.dtype, out.dtype));
  cpu::matmul_forward(*this, out, inp, weight, bias, N, C, OC);
}

void CpuBackend::matmul_backward(TypedPtr dinp, float* dweight, float* dbias, ConstTypedPtr dout, ConstTypedPtr inp, ConstTypedPtr weight, int64_t N, int C, int OC) {
  Scope s(profile_, matmul_class_, op_cost::matmul_backward(N, C, OC, static_cast<bool>(dinp), dout.dtype));
  cpu::matmul_backward(*this, dinp, dweight, dbias, dout, inp, weight, N, C, OC);
}

void CpuBackend::matmul_backward_overwrite(TypedPtr dinp, float* dweight, float* dbias, ConstTypedPtr dout, ConstTypedPtr inp, ConstTypedPtr weight, int64_t N, int C, int OC) {
  Scope s(profile_, matmul_class_, op_cost::matmul_backward_overwrite(N, C, OC, dout.dtype));
  cpu::matmul_backward_overwrite(*this, dinp, dweight, dbias, dout, inp, weight, N, C, OC);
}

void CpuBackend::matmul_gelu_forward(TypedPtr fch, TypedPtr fch_gelu, ConstTypedPtr inp, ConstTypedPtr weight, const float* bias, int64_t N, int C, int OC, MlpActivation kind) {
  Scope s(profile_, matmul_class_, op_cost::matmul_gelu_forward(N, C, OC, inp.dtype, fch.dtype));
  cpu::matmul_gelu_forward(*this, fch, fch_gelu, inp, weight, bias, N, C, OC, kind);
}

bool CpuBackend::mlp_fusion_one_region(DType dtype, int64_t N, int C, int OC) const {
  return cpu::mlp_fusion_one_region(*this, dtype, N, C, OC);
}

void CpuBackend::gelu_matmul_backward(TypedPtr dpre, float* dweight, float* dbias, ConstTypedPtr dout, ConstTypedPtr pre, ConstTypedPtr weight, int64_t N, int C, int OC, MlpActivation kind) {
  Scope s(profile_, matmul_class_, op_cost::gelu_matmul_backward(N, C, OC, pre.dtype));
  cpu::gelu_matmul_backward(*this, dpre, dweight, dbias, dout, pre, weight, N, C, OC, kind);
}

void CpuBackend::attention_forward(TypedPtr out, float* lse, ConstTypedPtr qkv, int B, int T, int C, int NH, float dropout_p, uint64_t seed) {
  Scope s(profile_, op_cost::attention_forward(B, T, C, qkv.dtype));
  cpu::attention_forward(*this, out, lse, qkv, B, T, C, NH, dropout_p, seed);
}

void CpuBackend::attention_backward(TypedPtr dqkv, ConstTypedPtr dout, ConstTypedPtr out, const float* lse, ConstTypedPtr qkv, int B, int T, int C, int NH, float dropout_p, uint64_t seed) {
  Scope s(profile_, op_cost::attention_backward(B, T, C, qkv.dtype));
  cpu::attention_backward(*this, dqkv, dout, out, lse, qkv, B, T, C, NH, dropout_p, seed);
}

void CpuBackend::gelu_forward(TypedPtr out, ConstTypedPtr inp, int64_t N, MlpActivation kind) {
  Scope s(profile_, op_cost::gelu_forward(N, inp.dtype));
  cpu::gelu_forward(*this, out, inp, N, kind);
}

void CpuBackend::gelu_backward(TypedPtr dinp, ConstTypedPtr inp, ConstTypedPtr dout, int64_t N, MlpActivation kind) {
  Scope s(profile_, op_cost::gelu_backward(N, inp.dtype));
  cpu::gelu_backward(*this, dinp, inp, dout, N, kind);
}

void CpuBackend::gelu_backward_overwrite(TypedPtr dinp, ConstTypedPtr inp, ConstTypedPtr dout, int64_t N, MlpActivation kind) {
  Scope s(profile_, op_cost::gelu_backward_overwrite(N, inp.dtype));
  cpu::gelu_backward_overwrite(*this, dinp, inp, dout, N, kind);
}
}  // namespace nanogpt
