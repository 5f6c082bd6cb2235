// CpuBackend: the Backend (kernels/backend.h) of the CPU: host memory, and the ops run by the
// kernels of kernels/cpu. It also holds what those kernels need that must not be global: the
// oneDNN engine and stream, a cache of matmul primitives keyed by shape, the CPU target of the
// dispatched kernels, and the run's chosen kernel ways. One per process (the trainer/sampler owns
// it; Muon's threads each keep their own for their Newton-Schulz products).
#pragma once

#include <memory>
#include <string>

#include "kernels/backend.h"
#include "kernels/kernel_ways.h"

namespace nanogpt {

class CpuBackend : public Backend {
 public:
  CpuBackend();
  ~CpuBackend() override;
  CpuBackend(const CpuBackend&) = delete;
  CpuBackend& operator=(const CpuBackend&) = delete;

  // Opaque oneDNN state (engine, stream, primitive cache); defined in kernels/cpu/context_impl.h.
  struct Impl;
  Impl& impl() { return *impl_; }

  // The CPU target the dispatched kernels run at and the ones compiled in, e.g. "avx512_bf16
  // (compiled: baseline sse4 avx2 avx512 avx512_bf16 avx512_spr)" (core/cpu_target.h).
  std::string cpu_target_description() const;

  // Which way the families of products with several run (kernels/kernel_ways.h); the defaults
  // until the run sets what it chose.
  const KernelWays& ways() const { return ways_; }
  void set_ways(const KernelWays& ways) { ways_ = ways; }

  // ---- MemorySpace: the host's memory ----
  const char* memory_name() const override { return "cpu"; }
  bool host_addressable() const override { return true; }
  void* allocate(size_t bytes) override;
  void release(void* p) noexcept override;
  void zero_bytes(void* dst, size_t bytes) override;
  void copy_bytes(void* dst, const void* src, size_t bytes) override;
  void upload(void* dst, const void* host_src, size_t bytes) override;
  void download(void* host_dst, const void* src, size_t bytes) override;
  void synchronize() override {}
  // Every op, in every dtype, but the naive attention's (float32 only).
  bool supports(std::string_view op, DType dtype) const override {
    return dtype == DType::kF32 || !op.starts_with("attention_naive");
  }

  // ---- ops (kernels/backend.h; each runs the cpu:: kernel, timed when a profile is attached) ----
  void encoder_forward(float* out, const int* inp, const float* wte, const float* wpe, int B, int T, int C) override;
  void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* inp, int B, int T, int C) override;
  void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias, int64_t N, int C, NormKind norm) override;
  void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp, const float* weight, const float* mean, const float* rstd, int64_t N, int C, NormKind norm) override;
  void residual_layernorm_forward(float* res, float* out, float* mean, float* rstd, const float* a, const float* b, const float* weight, const float* bias, int64_t N, int C, NormKind norm, float w) override;
  void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int64_t N, int C, int OC) override;
  void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp, const float* weight, int64_t N, int C, int OC) override;
  void attention_forward(float* out, float* lse, const float* qkv, int B, int T, int C, int NH, float dropout_p, uint64_t seed) override;
  void attention_backward(float* dqkv, const float* dout, const float* out, const float* lse, const float* qkv, int B, int T, int C, int NH, float dropout_p, uint64_t seed) override;
  void attention_naive_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH, float dropout_p, uint64_t seed) override;
  void attention_naive_backward(float* dqkv, const float* dout, const float* att, const float* qkv, int B, int T, int C, int NH, float dropout_p, uint64_t seed) override;
  void attention_decode(float* out, const float* q, const float* kcache, const float* vcache, int t, int C, int NH) override;
  void gelu_forward(float* out, const float* inp, int64_t N, MlpActivation kind) override;
  void gelu_backward(float* dinp, const float* inp, const float* dout, int64_t N, MlpActivation kind) override;
  void residual_forward(float* out, const float* a, const float* b, int64_t N) override;
  void skip_forward(float* out, const float* x, const float* skip, float w, int64_t N) override;
  double skip_backward(float* dskip, const float* dout, const float* skip, float w, int64_t N) override;
  void dropout_forward(float* out, const float* inp, int64_t N, float p, uint64_t seed) override;
  void dropout_backward(float* dinp, const float* dout, int64_t N, float p, uint64_t seed) override;
  void dropout_backward_overwrite(float* dinp, const float* dout, int64_t N, float p, uint64_t seed) override;
  void crossentropy_forward(float* losses, const float* logits, const int* targets, int64_t N, int V, int Vp) override;
  void crossentropy_forward_backward(float* losses, float* dlogits, const float* logits, const int* targets, float dloss, int64_t N, int V, int Vp) override;
  void qk_norm_rotary_forward(TypedPtr qkv, float* rstd, const float* cos, const float* sin, int64_t N, int T, int pos0, int C, int NH, float q_gain) override;
  void qk_norm_rotary_backward(TypedPtr dqkv, ConstTypedPtr qkv, const float* rstd, const float* cos, const float* sin, int64_t N, int T, int pos0, int C, int NH, float q_gain) override;
  void softcap_forward(float* z, int64_t N, float cap) override;
  void crossentropy_softcap_forward_backward(float* losses, float* dlogits, const float* logits, const int* targets, float dloss, int64_t N, int V, int Vp, float cap) override;
  void fill_zero(TypedPtr dst, int64_t n) override;
  void convert(TypedPtr dst, ConstTypedPtr src, int64_t n) override;
  void layernorm_forward(TypedPtr out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias, int64_t N, int C, NormKind norm) override;
  void residual_layernorm_forward(float* res, TypedPtr out, float* mean, float* rstd, const float* a, const float* b, const float* weight, const float* bias, int64_t N, int C, NormKind norm, float w) override;
  void layernorm_backward(float* dinp, float* dweight, float* dbias, ConstTypedPtr dout, const float* inp, const float* weight, const float* mean, const float* rstd, int64_t N, int C, NormKind norm) override;
  void matmul_forward(TypedPtr out, ConstTypedPtr inp, ConstTypedPtr weight, const float* bias, int64_t N, int C, int OC) override;
  void matmul_backward(TypedPtr dinp, float* dweight, float* dbias, ConstTypedPtr dout, ConstTypedPtr inp, ConstTypedPtr weight, int64_t N, int C, int OC) override;
  void matmul_backward_overwrite(TypedPtr dinp, float* dweight, float* dbias, ConstTypedPtr dout, ConstTypedPtr inp, ConstTypedPtr weight, int64_t N, int C, int OC) override;
  void matmul_gelu_forward(TypedPtr fch, TypedPtr fch_gelu, ConstTypedPtr inp, ConstTypedPtr weight, const float* bias, int64_t N, int C, int OC, MlpActivation kind) override;
  bool mlp_fusion_one_region(DType dtype, int64_t N, int C, int OC) const override;
  void gelu_matmul_backward(TypedPtr dpre, float* dweight, float* dbias, ConstTypedPtr dout, ConstTypedPtr pre, ConstTypedPtr weight, int64_t N, int C, int OC, MlpActivation kind) override;
  void attention_forward(TypedPtr out, float* lse, ConstTypedPtr qkv, int B, int T, int C, int NH, float dropout_p, uint64_t seed) override;
  void attention_backward(TypedPtr dqkv, ConstTypedPtr dout, ConstTypedPtr out, const float* lse, ConstTypedPtr qkv, int B, int T, int C, int NH, float dropout_p, uint64_t seed) override;
  void gelu_forward(TypedPtr out, ConstTypedPtr inp, int64_t N, MlpActivation kind) override;
  void gelu_backward(TypedPtr dinp, ConstTypedPtr inp, ConstTypedPtr dout, int64_t N, MlpActivation kind) override;
  void gelu_backward_overwrite(TypedPtr dinp, ConstTypedPtr inp, ConstTypedPtr dout, int64_t N, MlpActivation kind) override;

  // ---- optimizer ops (kernels/optimizer_ops.h; cpu/cpu_backend_optimizer_ops.cpp) ----
  void adamw_step(const AdamWArenas& a, ItemList<AdamWTensorStep> tensors, const AdamWConstants& k, const GradTransform* fused, TypedPtr params_lowp) override;
  void sgd_step(float* params, const float* grads, float* momentum, ItemList<SgdTensorStep> tensors, float lr, float mu) override;
  double sum_of_squares(const float* grads, ItemList<TensorSpan> tensors, float unscale) override;
  void scale_tensors(float* grads, ItemList<TensorSpan> tensors, float s) override;
  bool scale_and_check_finite(float* grads, int64_t n, float inv) override;
  void lerp_toward(float* avg, const float* x, int64_t n, float decay) override;
  void muon_momentum(float* buf, float* d, const float* g, int64_t n, float mu, bool nesterov) override;
  void muon_update(float* p, const float* o, int64_t n, float keep, float step) override;
  double frobenius_sum_sq(const float* m, int64_t n) override;
  void normalize_frobenius(float* x, const float* m, int64_t n, double eps) override;
  void scale_add(float* x, const float* y, int64_t n, float a) override;
  void combine(float* out, const float* u, const float* v, int64_t n, float a, float b) override;

 private:
  std::unique_ptr<Impl> impl_;
  KernelWays ways_;
};

}  // namespace nanogpt
