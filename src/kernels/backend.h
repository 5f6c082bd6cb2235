// Backend: the one seam through which the model (model/gpt.cpp) computes, on whichever device
// holds its arenas. Two halves:
// - memory (core/memory_space.h): the arenas for parameters, gradients, optimizer state, the
//   weights' average and activations are Buffers allocated from the backend, laid out by the same
//   parameter table and activation description on every device; upload, download, copy and fill;
// - compute: the ops of kernels/ops.h, ops_arch.h and ops_lowp.h (same names, arguments and
//   meanings, without the context), float32 forms and the mixed-precision TypedPtr forms; and the
//   optimizers' passes (kernels/optimizer_ops.h: AdamW, SGD, Muon and Newton-Schulz, the gradient
//   norm and clipping, the loss scaler's check, the weights' average).
// Device-specific fusions are capabilities the model asks about (mlp_fusion_one_region, ...),
// never forks of the model: the plain pair of ops is always there. Streams, events and device
// handles stay inside an implementation; the host waits only where a method returns a value
// (skip_backward's sum, synchronize()).
// Implementations: CpuBackend (kernels/cpu_backend.h, the CPU kernels of kernels/cpu). When an
// OpProfile is attached (set_profile) every op is timed into it and charged its FLOPs and bytes.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/check.h"
#include "core/memory_space.h"
#include "kernels/op_profile.h"
#include "kernels/ops.h"
#include "kernels/ops_arch.h"
#include "kernels/ops_lowp.h"
#include "kernels/optimizer_ops.h"

namespace nanogpt {

// Thrown by a backend's op for a case it has no kernel for (a dtype, a head size, a parameter):
// what() names the op, the case and the way around it. The op harness lists it as not supported.
class UnsupportedOp : public Error {
 public:
  using Error::Error;
};

class Backend : public MemorySpace, public OptimizerOps {
 public:
  ~Backend() override = default;

  // Every op called from here on is timed into `profile` (null: none, the default).
  void set_profile(OpProfile* profile) { profile_ = profile; }
  OpProfile* profile() const { return profile_; }
  // Moves the op times a backend measures asynchronously (a GPU's events) into the attached
  // profile; ProfileScope calls it as it ends. The CPU times its ops as they run: nothing to do.
  virtual void flush_profile() {}
  // The class the matmuls are charged to (OpClass::kMatmul; the head's: kClassifier).
  void set_matmul_class(OpClass c) { matmul_class_ = c; }
  OpClass matmul_class() const { return matmul_class_; }

  // Waits for every op queued so far (a no-op where ops run synchronously, as on the CPU).
  virtual void synchronize() = 0;
  // Whether this backend runs the op named `op` (one of the methods below) with tensors of
  // `dtype`: the op harness's support matrix (tests/backends), where a missing op is a listed gap.
  virtual bool supports(std::string_view op, DType dtype) const = 0;

  virtual void encoder_forward(float* out, const int* inp, const float* wte, const float* wpe, int B, int T, int C) = 0;
  virtual void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* inp, int B, int T, int C) = 0;
  virtual void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias, int64_t N, int C, NormKind norm = NormKind::kLayerNorm) = 0;
  virtual void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp, const float* weight, const float* mean, const float* rstd, int64_t N, int C, NormKind norm = NormKind::kLayerNorm) = 0;
  virtual void residual_layernorm_forward(float* res, float* out, float* mean, float* rstd, const float* a, const float* b, const float* weight, const float* bias, int64_t N, int C, NormKind norm = NormKind::kLayerNorm, float w = 1.0f) = 0;
  virtual void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int64_t N, int C, int OC) = 0;
  // dinp may be null.
  virtual void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp, const float* weight, int64_t N, int C, int OC) = 0;
  // Causal attention: QK^T and PV over the lower triangle, 2*B*T*T*C FLOPs forward (nanoGPT's
  // count), twice that backward. Through the context (which keeps the kernel's scratch).
  virtual void attention_forward(float* out, float* lse, const float* qkv, int B, int T, int C, int NH, float dropout_p, uint64_t seed) = 0;
  virtual void attention_backward(float* dqkv, const float* dout, const float* out, const float* lse, const float* qkv, int B, int T, int C, int NH, float dropout_p, uint64_t seed) = 0;
  // attention=naive: full (T, T) products (masked entries computed too), 4*B*T*T*C FLOPs forward
  // (QK^T and PV), twice that backward; att (B, NH, T, T) written and read back.
  virtual void attention_naive_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH, float dropout_p, uint64_t seed) = 0;
  virtual void attention_naive_backward(float* dqkv, const float* dout, const float* att, const float* qkv, int B, int T, int C, int NH, float dropout_p, uint64_t seed) = 0;
  virtual void attention_decode(float* out, const float* q, const float* kcache, const float* vcache, int t, int C, int NH) = 0;
  virtual void gelu_forward(float* out, const float* inp, int64_t N, MlpActivation kind) = 0;
  virtual void gelu_backward(float* dinp, const float* inp, const float* dout, int64_t N, MlpActivation kind) = 0;
  virtual void residual_forward(float* out, const float* a, const float* b, int64_t N) = 0;
  virtual void skip_forward(float* out, const float* x, const float* skip, float w, int64_t N) = 0;
  virtual double skip_backward(float* dskip, const float* dout, const float* skip, float w, int64_t N) = 0;
  virtual void dropout_forward(float* out, const float* inp, int64_t N, float p, uint64_t seed) = 0;
  virtual void dropout_backward(float* dinp, const float* dout, int64_t N, float p, uint64_t seed) = 0;
  virtual void dropout_backward_overwrite(float* dinp, const float* dout, int64_t N, float p, uint64_t seed) = 0;
  virtual void crossentropy_forward(float* losses, const float* logits, const int* targets, int64_t N, int V, int Vp) = 0;
  virtual void crossentropy_forward_backward(float* losses, float* dlogits, const float* logits, const int* targets, float dloss, int64_t N, int V, int Vp) = 0;
  // The architecture options' ops (ops_arch.h): QK-norm and rotary embeddings in one pass in place
  // on qkv's Q and K (either skipped: rstd, cos null; charged to attention), the logit soft-cap
  // (charged to the classifier).
  virtual void qk_norm_rotary_forward(TypedPtr qkv, float* rstd, const float* cos, const float* sin, int64_t N, int T, int pos0, int C, int NH, float q_gain = 1.0f) = 0;
  virtual void qk_norm_rotary_backward(TypedPtr dqkv, ConstTypedPtr qkv, const float* rstd, const float* cos, const float* sin, int64_t N, int T, int pos0, int C, int NH, float q_gain = 1.0f) = 0;
  virtual void softcap_forward(float* z, int64_t N, float cap) = 0;
  virtual void crossentropy_softcap_forward_backward(float* losses, float* dlogits, const float* logits, const int* targets, float dloss, int64_t N, int V, int Vp, float cap) = 0;
  // Zeroes a gradient buffer (any dtype) before the accumulating backward ops add into it.
  virtual void fill_zero(TypedPtr dst, int64_t n) = 0;
  // Mixed precision (ops_lowp.h). Byte counts use each tensor's element size.
  virtual void convert(TypedPtr dst, ConstTypedPtr src, int64_t n) = 0;
  virtual void layernorm_forward(TypedPtr out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias, int64_t N, int C, NormKind norm = NormKind::kLayerNorm) = 0;
  virtual void residual_layernorm_forward(float* res, TypedPtr out, float* mean, float* rstd, const float* a, const float* b, const float* weight, const float* bias, int64_t N, int C, NormKind norm = NormKind::kLayerNorm, float w = 1.0f) = 0;
  virtual void layernorm_backward(float* dinp, float* dweight, float* dbias, ConstTypedPtr dout, const float* inp, const float* weight, const float* mean, const float* rstd, int64_t N, int C, NormKind norm = NormKind::kLayerNorm) = 0;
  virtual void matmul_forward(TypedPtr out, ConstTypedPtr inp, ConstTypedPtr weight, const float* bias, int64_t N, int C, int OC) = 0;
  virtual void matmul_backward(TypedPtr dinp, float* dweight, float* dbias, ConstTypedPtr dout, ConstTypedPtr inp, ConstTypedPtr weight, int64_t N, int C, int OC) = 0;
  // matmul_backward with dinp (not null) overwritten, dinp = dout . weight: for an input gradient
  // that would otherwise be zero-filled first (same values). Float32 and the native bf16 matmul
  // skip the zero-fill; other dtypes zero-fill and accumulate (ops_lowp.h).
  virtual void matmul_backward_overwrite(TypedPtr dinp, float* dweight, float* dbias, ConstTypedPtr dout, ConstTypedPtr inp, ConstTypedPtr weight, int64_t N, int C, int OC) = 0;
  // The MLP's fused ops (fused=True; ops_lowp.h): charged to the matmul class with the matmul's
  // FLOPs and the bytes they move (fch and fch_gelu written; forward pre read, dpre written).
  virtual void matmul_gelu_forward(TypedPtr fch, TypedPtr fch_gelu, ConstTypedPtr inp, ConstTypedPtr weight, const float* bias, int64_t N, int C, int OC, MlpActivation kind) = 0;
  // Whether the fused MLP ops are one parallel region each at this shape (ops_lowp.h), so the
  // model fuses the MLP even with fused_mlp off.
  virtual bool mlp_fusion_one_region(DType dtype, int64_t N, int C, int OC) const = 0;
  virtual void gelu_matmul_backward(TypedPtr dpre, float* dweight, float* dbias, ConstTypedPtr dout, ConstTypedPtr pre, ConstTypedPtr weight, int64_t N, int C, int OC, MlpActivation kind) = 0;
  virtual void attention_forward(TypedPtr out, float* lse, ConstTypedPtr qkv, int B, int T, int C, int NH, float dropout_p, uint64_t seed) = 0;
  virtual void attention_backward(TypedPtr dqkv, ConstTypedPtr dout, ConstTypedPtr out, const float* lse, ConstTypedPtr qkv, int B, int T, int C, int NH, float dropout_p, uint64_t seed) = 0;
  virtual void gelu_forward(TypedPtr out, ConstTypedPtr inp, int64_t N, MlpActivation kind) = 0;
  virtual void gelu_backward(TypedPtr dinp, ConstTypedPtr inp, ConstTypedPtr dout, int64_t N, MlpActivation kind) = 0;
  // gelu_backward with dinp overwritten (no zero-fill first; same values). Float32 and bf16 skip
  // the zero-fill; other dtypes zero-fill and accumulate (ops_lowp.h).
  virtual void gelu_backward_overwrite(TypedPtr dinp, ConstTypedPtr inp, ConstTypedPtr dout, int64_t N, MlpActivation kind) = 0;

 protected:
  OpProfile* profile_ = nullptr;
  OpClass matmul_class_ = OpClass::kMatmul;
};

// For the lifetime of the scope, `backend`'s matmuls are charged to class `c` (the classifier's
// head: OpClass::kClassifier); the previous class afterwards.
class MatmulClassScope {
 public:
  MatmulClassScope(Backend& backend, OpClass c) : backend_(backend), saved_(backend.matmul_class()) {
    backend_.set_matmul_class(c);
  }
  ~MatmulClassScope() { backend_.set_matmul_class(saved_); }
  MatmulClassScope(const MatmulClassScope&) = delete;
  MatmulClassScope& operator=(const MatmulClassScope&) = delete;

 private:
  Backend& backend_;
  OpClass saved_;
};

// For the lifetime of the scope, `backend` times its ops into `profile` (null: none); the previous
// profile afterwards.
class ProfileScope {
 public:
  ProfileScope(Backend& backend, OpProfile* profile) : backend_(backend), saved_(backend.profile()) {
    backend_.set_profile(profile);
  }
  ~ProfileScope() {
    backend_.flush_profile();
    backend_.set_profile(saved_);
  }
  ProfileScope(const ProfileScope&) = delete;
  ProfileScope& operator=(const ProfileScope&) = delete;

 private:
  Backend& backend_;
  OpProfile* saved_;
};

}  // namespace nanogpt
