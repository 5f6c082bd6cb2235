// CudaBackend: the Backend (kernels/backend.h) of one NVIDIA GPU: device memory, and the ops run by
// the CUDA kernels of kernels/cuda (ops_cuda.h), unchanged: where their conventions differ from the
// seam's (which are the CPU's: ops.h), this class adapts them, not the kernels. Activation
// gradients that the seam accumulates and a kernel overwrites go through a device temporary and
// an add; a float32 bias of a 16-bit product is rounded first; the fused backward of the MLP's
// second product recomputes the activation; the soft-capped loss copies logits it would overwrite.
// What no kernel does yet is refused by name (UnsupportedOp): attention heads of more than 256
// (heads of 64 in bfloat16 run the tensor cores' flash kernels, other heads and float16
// attention_any_head.cu). Storage float32, bfloat16 or float16, arithmetic float32. QK-norm's
// query gain scales Q around the gain-free kernels (a kernel of its own).
// Work is queued on the default stream; the host waits where a method returns a value
// (skip_backward's sum), in download() and in synchronize(). With a profile attached every op is
// bracketed by CUDA events (gpu_op_timer.h), read when the profile's scope ends. This header includes no CUDA header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/backend.h"
#include "kernels/cuda/cuda_context.h"
#include "kernels/cuda/device_memory.h"
#include "kernels/cuda/gpu_op_timer.h"

namespace nanogpt {

class CudaBackend final : public Backend {
 public:
  // Takes device 0 (CudaContext); throws nanogpt::Error with the CUDA error text when none is
  // usable. gelu_epilogue: the bfloat16 MLP's tanh GELU in cuBLASLt's epilogues.
  // device: the index among the visible GPUs (a data-parallel rank's own).
  explicit CudaBackend(bool allow_tf32 = true, bool gelu_epilogue = true, int device = 0);
  ~CudaBackend() override;

  cuda::CudaContext& context() { return ctx_; }

  // ---- MemorySpace: the GPU's memory ----
  const char* memory_name() const override { return "cuda"; }
  bool host_addressable() const override { return false; }
  void* allocate(size_t bytes) override;
  void release(void* p) noexcept override;
  void zero_bytes(void* dst, size_t bytes) override;
  void copy_bytes(void* dst, const void* src, size_t bytes) override;
  void upload(void* dst, const void* host_src, size_t bytes) override;
  void download(void* host_dst, const void* src, size_t bytes) override;
  void synchronize() override;
  void flush_profile() override;  // waits for the timed ops (--profile) and adds their times
  // float32, bfloat16 and float16 tensors (float16: not yet run on a GPU).
  bool supports(std::string_view op, DType dtype) const override;

  // ---- ops ----
  void encoder_forward(float* out, const int* inp, const float* wte, const float* wpe, int B, int T,
                       int C) override;
  void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* inp, int B, int T,
                        int C) override;
  void layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                         const float* weight, const float* bias, int64_t N, int C,
                         NormKind norm) override;
  void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                          const float* inp, const float* weight, const float* mean,
                          const float* rstd, int64_t N, int C, NormKind norm) override;
  void residual_layernorm_forward(float* res, float* out, float* mean, float* rstd, const float* a,
                                  const float* b, const float* weight, const float* bias, int64_t N,
                                  int C, NormKind norm, float w) override;
  void matmul_forward(float* out, const float* inp, const float* weight, const float* bias,
                      int64_t N, int C, int OC) override;
  void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                       const float* inp, const float* weight, int64_t N, int C, int OC) override;
  void attention_forward(float* out, float* lse, const float* qkv, int B, int T, int C, int NH,
                         float dropout_p, uint64_t seed) override;
  void attention_backward(float* dqkv, const float* dout, const float* out, const float* lse,
                          const float* qkv, int B, int T, int C, int NH, float dropout_p,
                          uint64_t seed) override;
  void attention_naive_forward(float* out, float* att, const float* qkv, int B, int T, int C,
                               int NH, float dropout_p, uint64_t seed) override;
  void attention_naive_backward(float* dqkv, const float* dout, const float* att, const float* qkv,
                                int B, int T, int C, int NH, float dropout_p,
                                uint64_t seed) override;
  void attention_decode(float* out, const float* q, const float* kcache, const float* vcache, int t,
                        int C, int NH) override;
  void gelu_forward(float* out, const float* inp, int64_t N, MlpActivation kind) override;
  void gelu_backward(float* dinp, const float* inp, const float* dout, int64_t N,
                     MlpActivation kind) override;
  void residual_forward(float* out, const float* a, const float* b, int64_t N) override;
  void skip_forward(float* out, const float* x, const float* skip, float w, int64_t N) override;
  double skip_backward(float* dskip, const float* dout, const float* skip, float w,
                       int64_t N) override;
  void dropout_forward(float* out, const float* inp, int64_t N, float p, uint64_t seed) override;
  void dropout_backward(float* dinp, const float* dout, int64_t N, float p, uint64_t seed) override;
  void dropout_backward_overwrite(float* dinp, const float* dout, int64_t N, float p,
                                  uint64_t seed) override;
  void crossentropy_forward(float* losses, const float* logits, const int* targets, int64_t N,
                            int V, int Vp) override;
  void crossentropy_forward_backward(float* losses, float* dlogits, const float* logits,
                                     const int* targets, float dloss, int64_t N, int V,
                                     int Vp) override;
  void qk_norm_rotary_forward(TypedPtr qkv, float* rstd, const float* cos, const float* sin,
                              int64_t N, int T, int pos0, int C, int NH, float q_gain) override;
  void qk_norm_rotary_backward(TypedPtr dqkv, ConstTypedPtr qkv, const float* rstd,
                               const float* cos, const float* sin, int64_t N, int T, int pos0,
                               int C, int NH, float q_gain) override;
  void softcap_forward(float* z, int64_t N, float cap) override;
  void crossentropy_softcap_forward_backward(float* losses, float* dlogits, const float* logits,
                                             const int* targets, float dloss, int64_t N, int V,
                                             int Vp, float cap) override;
  void fill_zero(TypedPtr dst, int64_t n) override;
  void convert(TypedPtr dst, ConstTypedPtr src, int64_t n) override;
  void layernorm_forward(TypedPtr out, float* mean, float* rstd, const float* inp,
                         const float* weight, const float* bias, int64_t N, int C,
                         NormKind norm) override;
  void residual_layernorm_forward(float* res, TypedPtr out, float* mean, float* rstd,
                                  const float* a, const float* b, const float* weight,
                                  const float* bias, int64_t N, int C, NormKind norm,
                                  float w) override;
  void layernorm_backward(float* dinp, float* dweight, float* dbias, ConstTypedPtr dout,
                          const float* inp, const float* weight, const float* mean,
                          const float* rstd, int64_t N, int C, NormKind norm) override;
  void matmul_forward(TypedPtr out, ConstTypedPtr inp, ConstTypedPtr weight, const float* bias,
                      int64_t N, int C, int OC) override;
  void matmul_backward(TypedPtr dinp, float* dweight, float* dbias, ConstTypedPtr dout,
                       ConstTypedPtr inp, ConstTypedPtr weight, int64_t N, int C, int OC) override;
  void matmul_backward_overwrite(TypedPtr dinp, float* dweight, float* dbias, ConstTypedPtr dout,
                                 ConstTypedPtr inp, ConstTypedPtr weight, int64_t N, int C,
                                 int OC) override;
  void matmul_gelu_forward(TypedPtr fch, TypedPtr fch_gelu, ConstTypedPtr inp, ConstTypedPtr weight,
                           const float* bias, int64_t N, int C, int OC,
                           MlpActivation kind) override;
  bool mlp_fusion_one_region(DType, int64_t, int, int) const override { return false; }
  void gelu_matmul_backward(TypedPtr dpre, float* dweight, float* dbias, ConstTypedPtr dout,
                            ConstTypedPtr pre, ConstTypedPtr weight, int64_t N, int C, int OC,
                            MlpActivation kind) override;
  void attention_forward(TypedPtr out, float* lse, ConstTypedPtr qkv, int B, int T, int C, int NH,
                         float dropout_p, uint64_t seed) override;
  void attention_backward(TypedPtr dqkv, ConstTypedPtr dout, ConstTypedPtr out, const float* lse,
                          ConstTypedPtr qkv, int B, int T, int C, int NH, float dropout_p,
                          uint64_t seed) override;
  void gelu_forward(TypedPtr out, ConstTypedPtr inp, int64_t N, MlpActivation kind) override;
  void gelu_backward(TypedPtr dinp, ConstTypedPtr inp, ConstTypedPtr dout, int64_t N,
                     MlpActivation kind) override;
  void gelu_backward_overwrite(TypedPtr dinp, ConstTypedPtr inp, ConstTypedPtr dout, int64_t N,
                               MlpActivation kind) override;

  // ---- optimizer ops (kernels/optimizer_ops.h; cuda_optimizer_ops.cu) ----
  void adamw_step(const AdamWArenas& a, ItemList<AdamWTensorStep> tensors,
                  const AdamWConstants& k, const GradTransform* fused,
                  TypedPtr params_lowp) override;
  void sgd_step(float* params, const float* grads, float* momentum,
                ItemList<SgdTensorStep> tensors, float lr, float mu) override;
  double sum_of_squares(const float* grads, ItemList<TensorSpan> tensors,
                        float unscale) override;
  void scale_tensors(float* grads, ItemList<TensorSpan> tensors, float s) override;
  bool scale_and_check_finite(float* grads, int64_t n, float inv) override;
  void lerp_toward(float* avg, const float* x, int64_t n, float decay) override;
  void muon_momentum(float* buf, float* d, const float* g, int64_t n, float mu,
                     bool nesterov) override;
  void muon_update(float* p, const float* o, int64_t n, float keep, float step) override;
  double frobenius_sum_sq(const float* m, int64_t n) override;
  void normalize_frobenius(float* x, const float* m, int64_t n, double eps) override;
  void scale_add(float* x, const float* y, int64_t n, float a) override;
  void combine(float* out, const float* u, const float* v, int64_t n, float a, float b) override;

 private:
  // A device temporary of at least `bytes` for one op's intermediate (grown, never shrunk).
  void* temp(size_t bytes);
  // The float32 bias (OC, nullable) as the product's output dtype wants it.
  ConstTypedPtr bias_for(const float* bias, DType out_dtype, int OC);

  cuda::CudaContext ctx_;
  bool gelu_epilogue_ = true;
  cuda::DeviceBuffer<std::byte> temp_;
  cuda::DeviceBuffer<uint16_t> bias16_;
  cuda::DeviceBuffer<double> partials_;  // skip_backward's and the norms' per-span sums
  cuda::DeviceBuffer<float> norm_scale_;  // (1) normalize_frobenius's 1 / (norm + eps)
  // The sums of squares (x * unscale)^2 of the tensors' spans of kSumSpan elements into
  // partials_, in order; returns how many.
  int64_t launch_span_sums_of_squares(const float* x, ItemList<TensorSpan> tensors, float unscale);
  cuda::GpuOpTimer timer_;               // --profile: every op's GPU time, by CUDA events
};

}  // namespace nanogpt
