// CudaBackend (kernels/cuda/cuda_backend.h): the seam's ops on the GPU, each the CUDA kernel of
// ops_cuda.h that computes it, adapted to the seam's conventions (kernels/ops.h) where they differ,
// plus the three small kernels no op of ops_cuda.h had: acc += x in any pair of dtypes, the U-net
// skip's out = x + w * skip, and its backward with the weight's gradient summed in float64 over
// the CPU's fixed spans of 4096 elements, added on the host in span order (the CPU's order).
#include <vector>

#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/cuda_util.cuh"
#include "kernels/cuda/ops_cuda.h"
#include "kernels/cuda/vec.cuh"
#include "kernels/op_costs.h"

namespace nanogpt {

namespace {

constexpr int kThreads = 256;
constexpr int64_t kSkipSpan = 4096;  // ops.h: skip_backward's sum spans

template <typename Ta, typename Tx>
__global__ void accumulate_kernel(Ta* acc, const Tx* x, int64_t n) {
  for (int64_t i = cuda::thread_index(); i < n; i += cuda::thread_stride()) {
    acc[i] = cuda::from_f32<Ta>(cuda::to_f32(acc[i]) + cuda::to_f32(x[i]));
  }
}

__global__ void skip_forward_kernel(float* out, const float* x, const float* skip, float w,
                                    int64_t n) {
  for (int64_t i = cuda::thread_index(); i < n; i += cuda::thread_stride()) {
    out[i] = x[i] + w * skip[i];
  }
}

// One block per span: dskip = w * dout (each element read before written, so dskip may alias
// dout or skip), partial[span] = sum over the span of dout * skip in float64 (a fixed tree).
__global__ void skip_backward_kernel(float* dskip, const float* dout, const float* skip, float w,
                                     int64_t n, double* partial) {
  __shared__ double sums[kThreads];
  const int64_t begin = static_cast<int64_t>(blockIdx.x) * kSkipSpan;
  const int64_t end = begin + kSkipSpan < n ? begin + kSkipSpan : n;
  double s = 0;
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const float d = dout[i], k = skip[i];
    s += static_cast<double>(d) * static_cast<double>(k);
    dskip[i] = w * d;
  }
  sums[threadIdx.x] = s;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (static_cast<int>(threadIdx.x) < half) sums[threadIdx.x] += sums[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = sums[0];
}

// The query columns of qkv rows (N, 3C): columns [0, C) of each row times s, in place.
template <typename T>
__global__ void scale_query_kernel(T* qkv, int64_t N, int C, float s) {
  const int64_t n = N * C;
  for (int64_t i = cuda::thread_index(); i < n; i += cuda::thread_stride()) {
    T* x = qkv + (i / C) * 3 * C + (i % C);
    *x = cuda::from_f32<T>(cuda::to_f32(*x) * s);
  }
}

// QK-norm's query gain (ModelConfig::qk_norm_gain) around the gain-free kernels: Q's normalized
// head vectors times s (float32 or bfloat16 qkv rows (N, 3C)).
void scale_query(TypedPtr qkv, int64_t N, int C, float s) {
  if (N <= 0) return;
  cuda::dispatch_dtype(qkv.dtype, "scale_query", [&](auto t) {
    using T = decltype(t);
    scale_query_kernel<T>
        <<<cuda::grid_for(N * C, kThreads), kThreads>>>(static_cast<T*>(qkv.data), N, C, s);
  });
  NANOGPT_CUDA_CHECK_LAUNCH();
}

// acc (n) += x (n), any of float32 / bfloat16 each.
void accumulate(TypedPtr acc, ConstTypedPtr x, int64_t n) {
  if (n <= 0) return;
  cuda::dispatch_dtype(acc.dtype, "accumulate", [&](auto a) {
    cuda::dispatch_dtype(x.dtype, "accumulate", [&](auto t) {
      using Ta = decltype(a);
      using Tx = decltype(t);
      accumulate_kernel<Ta, Tx><<<cuda::grid_for(n, kThreads), kThreads>>>(
          static_cast<Ta*>(acc.data), static_cast<const Tx*>(x.data), n);
    });
  });
  NANOGPT_CUDA_CHECK_LAUNCH();
}

[[noreturn]] void unsupported(const char* op, const std::string& what) {
  throw UnsupportedOp(fmt::format("{} on the GPU: {}", op, what));
}

}  // namespace

CudaBackend::CudaBackend(bool allow_tf32, bool gelu_epilogue, int device)
    : ctx_(allow_tf32, device), gelu_epilogue_(gelu_epilogue) {}
CudaBackend::~CudaBackend() = default;

// ---- memory ----

void* CudaBackend::allocate(size_t bytes) {
  void* p = cuda::device_alloc(bytes ? bytes : 64, "a CudaBackend arena");
  cuda::fill_zero_device(p, bytes ? bytes : 64);
  return p;
}
void CudaBackend::release(void* p) noexcept { cuda::device_free(p); }
void CudaBackend::zero_bytes(void* dst, size_t bytes) {
  if (bytes) cuda::fill_zero_device(dst, bytes);
}
void CudaBackend::copy_bytes(void* dst, const void* src, size_t bytes) {
  if (bytes) cuda::copy_device(dst, src, bytes);
}
void CudaBackend::upload(void* dst, const void* host_src, size_t bytes) {
  if (bytes) cuda::copy_to_device(dst, host_src, bytes);
}
void CudaBackend::download(void* host_dst, const void* src, size_t bytes) {
  if (bytes) cuda::copy_to_host(host_dst, src, bytes);
}
void CudaBackend::synchronize() { ctx_.synchronize("CudaBackend ops"); }
void CudaBackend::flush_profile() {
  if (profile_) timer_.flush(*profile_);
}

bool CudaBackend::supports(std::string_view /*op*/, DType /*dtype*/) const { return true; }

void* CudaBackend::temp(size_t bytes) {
  if (temp_.bytes() < bytes) {
    temp_ = cuda::DeviceBuffer<std::byte>();
    temp_ = cuda::DeviceBuffer<std::byte>(bytes, "CudaBackend's temporary");
  }
  return temp_.data();
}

ConstTypedPtr CudaBackend::bias_for(const float* bias, DType out_dtype, int OC) {
  if (bias == nullptr) return {};
  if (out_dtype == DType::kF32) return bias;
  if (bias16_.size() < static_cast<size_t>(OC)) {
    bias16_ = cuda::DeviceBuffer<uint16_t>(static_cast<size_t>(OC), "a 16-bit bias");
  }
  cuda::convert({bias16_.data(), out_dtype}, bias, OC);
  return {bias16_.data(), out_dtype};
}

// ---- ops ----

void CudaBackend::encoder_forward(float* out, const int* inp, const float* wte, const float* wpe,
                                  int B, int T, int C) {
  cuda::GpuOpScope timed(timer_, profile_ != nullptr, "encoder_forward",
                         op_cost::encoder_forward(B, T, C));
  cuda::encoder_forward(out, inp, wte, wpe, B, T, C);
}
void CudaBackend::encoder_backward(float* dwte, float* dwpe, const float* dout, const int* inp,
                                   int B, int T, int C) {
  cuda::GpuOpScope timed(timer_, profile_ != nullptr, "encoder_backward",
                         op_cost::encoder_backward(B, T, C));
  cuda::encoder_backward(ctx_, dwte, dwpe, dout, inp, B, T, C);
}
void CudaBackend::layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                                    const float* weight, const float* bias, int64_t N, int C,
                                    NormKind norm) {
  cuda::GpuOpScope timed(timer_, profile_ != nullptr, "layernorm_forward",
                         op_cost::layernorm_forward(N, C));
  cuda::layernorm_forward(TypedPtr(out), mean, rstd, inp, weight, bias, N, C, norm);
}
void CudaBackend::layernorm_forward(TypedPtr out, float* mean, float* rstd, const float* inp,
                                    const float* weight, const float* bias, int64_t N, int C,
                                    NormKind norm) {
  cuda::GpuOpScope timed(timer_, profile_ != nullptr, "layernorm_forward",
                         op_cost::layernorm_forward(N, C, out.dtype));
  cuda::layernorm_forward(out, mean, rstd, inp, weight, bias, N, C, norm);
}
void CudaBackend::layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                     const float* inp, const float* weight, const float* mean,
                                     const float* rstd, int64_t N, int C, NormKind norm) {
  cuda::GpuOpScope timed(timer_, profile_ != nullptr, "layernorm_backward",
                         op_cost::layernorm_backward(N, C));
  cuda::layernorm_backward(ctx_, dinp, dweight, dbias, ConstTypedPtr(dout), inp, weight, mean, rstd,
                           N, C, norm);
}
void CudaBackend::layernorm_backward(float* dinp, float* dweight, float* dbias, ConstTypedPtr dout,
                                     const float* inp, const float* weight, const float* mean,
                                     const float* rstd, int64_t N, int C, NormKind norm) {
  cuda::GpuOpScope timed(timer_, profile_ != nullptr, "layernorm_backward",
                         op_cost::layernorm_backward(N, C, dout.dtype));
  cuda::layernorm_backward(ctx_, dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C, norm);
}
void CudaBackend::residual_layernorm_forward(float* res, float* out, float* mean, float* rstd,
                                             const float* a, const float* b, const float* weight,
                                             const float* bias, int64_t N, int C, NormKind norm,
                                             float w) {
  cuda::GpuOpScope timed(timer_, profile_ != nullptr, "residual_layernorm_forward",
                         op_cost::residual_layernorm_forward(N, C));
  residual_layernorm_forward(res, TypedPtr(out), mean, rstd, a, b, weight, bias, N, C, norm, w);
}
void CudaBackend::residual_layernorm_forward(float* res, TypedPtr out, float* mean, float* rstd,
                                             const float* a, const float* b, const float* weight,
                                             const float* bias, int64_t N, int C, NormKind norm,
                                             float w) {
  cuda::GpuOpScope timed(timer_, profile_ != nullptr, "residual_layernorm_forward",
                         op_cost::residual_layernorm_forward(N, C, out.dtype));
  if (w == 1.0f) {
    cuda::residual_layernorm_forward(res, out, mean, rstd, a, b, weight, bias, N, C, norm);
    return;
  }
  skip_forward(res, a, b, w, N * C);  // the branch weight (attn_gain): res = a + w * b
  cuda::layernorm_forward(out, mean, rstd, res, weight, bias, N, C, norm);
}

void CudaBackend::matmul_forward(float* out, const float* inp, const float* weight,
                                 const float* bias, int64_t N, int C, int OC) {
  cuda::GpuOpScope timed(timer_, profile_ != nullptr, "matmul_forward",
                         op_cost::matmul_forward(N, C, OC));
  matmul_forward(TypedPtr(out), ConstTypedPtr(inp), ConstTypedPtr(weight), bias, N, C, OC);
}
void CudaBackend::matmul_forward(TypedPtr out, ConstTypedPtr inp, ConstTypedPtr weight,
                                 const float* bias, int64_t N, int C, int OC) {
  cuda::GpuOpScope timed(timer_, profile_ != nullptr, "matmul_forward",
                         op_cost::matmul_forward(N, C, OC, inp.dtype, out.dtype));
  cuda::matmul_forward(ctx_, out, inp, weight, bias_for(bias, out.dtype, OC), N, C, OC);
}
void CudaBackend::matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                  const float* inp, const float* weight, int64_t N, int C, int OC) {
  cuda::GpuOpScope timed(timer_, profile_ != nullptr, "matmul_backward",
                         op_cost::matmul_backward(N, C, OC, dinp != nullptr));
  matmul_backward(TypedPtr(dinp), dweight, dbias, ConstTypedPtr(dout), ConstTypedPtr(inp),
                  ConstTypedPtr(weight), N, C, OC);
}
// The seam accumulates dinp; the kernel overwrites it: the product goes to a temporary, then adds.
void CudaBackend::matmul_backward(TypedPtr dinp, float* dweight, float* dbias, ConstTypedPtr dout,
                                  ConstTypedPtr inp, ConstTypedPtr weight, int64_t N, int C,
                                  int OC) {
  cuda::GpuOpScope timed(timer_, profile_ != nullptr, "matmul_backward",
                         op_cost::matmul_backward(N, C, OC, static_cast<bool>(dinp), dout.dtype));
  if (!dinp) {
    cuda::matmul_backward(ctx_, {}, dweight, dbias, dout, inp, weight, N, C, OC);
    return;
  }
  const TypedPtr t{temp(static_cast<size_t>(N) * C * dtype_size(dinp.dtype)), dinp.dtype};
  cuda::matmul_backward(ctx_, t, dweight, dbias, dout, inp, weight, N, C, OC);
  accumulate(dinp, t, N * C);
}
void CudaBackend::matmul_backward_overwrite(TypedPtr dinp, float* dweight, float* dbias,
                                            ConstTypedPtr dout, ConstTypedPtr inp,
                                            ConstTypedPtr weight, int64_t N, int C, int OC) {
  cuda::GpuOpScope timed(timer_, profile_ != nullptr, "matmul_backward_overwrite",
                         op_cost::matmul_backward_overwrite(N, C, OC, dout.dtype));
  cuda::matmul_backward(ctx_, dinp, dweight, dbias, dout, inp, weight, N, C, OC);
}
void CudaBackend::matmul_gelu_forward(TypedPtr fch, TypedPtr fch_gelu, ConstTypedPtr inp,
                                      ConstTypedPtr weight, const float* bias, int64_t N, int C,
                                      int OC, MlpActivation kind) {
  cuda::GpuOpScope timed(timer_, profile_ != nullptr, "matmul_gelu_forward",
                         op_cost::matmul_gelu_forward(N, C, OC, inp.dtype, fch.dtype));
  cuda::matmul_gelu_forward(ctx_, fch_gelu, fch, inp, weight, bias_for(bias, fch.dtype, OC), N, C,
                            OC, kind, gelu_epilogue_);
}
// The seam's op recomputes gelu(pre); the kernel reads it: it is recomputed into a temporary.
void CudaBackend::gelu_matmul_backward(TypedPtr dpre, float* dweight, float* dbias,
                                       ConstTypedPtr dout, ConstTypedPtr pre, ConstTypedPtr weight,
                                       int64_t N, int C, int OC, MlpActivation kind) {
  cuda::GpuOpScope timed(timer_, profile_ != nullptr, "gelu_matmul_backward",
                         op_cost::gelu_matmul_backward(N, C, OC, pre.dtype));
  const TypedPtr act{temp(static_cast<size_t>(N) * C * dtype_size(pre.dtype)), pre.dtype};
  cuda::gelu_forward(act, pre, N * C, kind);
  cuda::matmul_gelu_backward(ctx_, dpre, dweight, dbias, dout, act, weight, N, C, OC, pre, kind,
                             gelu_epilogue_);
}

void CudaBackend::attention_forward(float* out, float* lse, const float* qkv, int B, int T, int C,
                                    int NH, float dropout_p, uint64_t seed) {
  cuda::GpuOpScope timed(timer_, profile_ != nullptr, "attention_forward",
                         op_cost::attention_forward(B, T, C));
  attention_forward(TypedPtr(out), lse, ConstTypedPtr(qkv), B, T, C, NH, dropout_p, seed);
}
void CudaBackend::attention_forward(TypedPtr out, float* lse, ConstTypedPtr qkv, int B, int T,
                                    int C, int NH, float dropout_p, uint64_t seed) {
  cuda::GpuOpScope timed(timer_, profile_ != nullptr, "attention_forward",
                         op_cost::attention_forward(B, T, C, qkv.dtype));
  if (cuda::flash_attention_supported(qkv.dtype, C, NH)) {
    cuda::flash_attention_forward_mma(ctx_, out, lse, qkv, B, T, C, NH, dropout_p, seed);
    return;
  }
  if (!cuda::attention_any_head_supported(C, NH)) {
    unsupported("attention_forward (flash)",
                fmt::format("heads of at most 256 (here {}, head size {}); attention='naive' runs "
                            "the rest in float32",
                            dtype_name(qkv.dtype), C / NH));
  }
  cuda::attention_any_head_forward(out, lse, qkv, B, T, C, NH, dropout_p, seed);
}
void CudaBackend::attention_backward(float* dqkv, const float* dout, const float* out,
                                     const float* lse, const float* qkv, int B, int T, int C,
                                     int NH, float dropout_p, uint64_t seed) {
  cuda::GpuOpScope timed(timer_, profile_ != nullptr, "attention_backward",
                         op_cost::attention_backward(B, T, C));
  attention_backward(TypedPtr(dqkv), ConstTypedPtr(dout), ConstTypedPtr(out), lse,
                     ConstTypedPtr(qkv), B, T, C, NH, dropout_p, seed);
}
void CudaBackend::attention_backward(TypedPtr dqkv, ConstTypedPtr dout, ConstTypedPtr out,
                                     const float* lse, ConstTypedPtr qkv, int B, int T, int C,
                                     int NH, float dropout_p, uint64_t seed) {
  cuda::GpuOpScope timed(timer_, profile_ != nullptr, "attention_backward",
                         op_cost::attention_backward(B, T, C, qkv.dtype));
  const bool flash = cuda::flash_attention_supported(qkv.dtype, C, NH);
  if (!flash && !cuda::attention_any_head_supported(C, NH)) {
    unsupported(
        "attention_backward (flash)",
        fmt::format("heads of at most 256 (here {}, head size {})", dtype_name(qkv.dtype), C / NH));
  }
  const int64_t n = int64_t{B} * T * 3 * C;
  const size_t grad_bytes = (static_cast<size_t>(n) * dtype_size(qkv.dtype) + 255) / 256 * 256;
  const size_t delta_bytes = static_cast<size_t>(B) * NH * T * sizeof(float);
  auto* scratch = static_cast<std::byte*>(temp(grad_bytes + (flash ? 0 : delta_bytes)));
  const TypedPtr t{scratch, qkv.dtype};
  if (flash) {
    cuda::flash_attention_backward_mma(ctx_, t, dout, out, lse, qkv, B, T, C, NH, dropout_p, seed);
  } else {
    cuda::attention_any_head_backward(t, reinterpret_cast<float*>(scratch + grad_bytes), dout, out,
                                      lse, qkv, B, T, C, NH, dropout_p, seed);
  }
  accumulate(dqkv, t, n);
}
void CudaBackend::attention_naive_forward(float* out, float* att, const float* qkv, int B, int T,
                                          int C, int NH, float dropout_p, uint64_t seed) {
  cuda::GpuOpScope timed(timer_, profile_ != nullptr, "attention_naive_forward",
                         op_cost::attention_naive_forward(B, T, C, NH));
  cuda::attention_forward(ctx_, TypedPtr(out), TypedPtr(att), ConstTypedPtr(qkv), B, T, C, NH,
                          dropout_p, seed);
}
void CudaBackend::attention_naive_backward(float* dqkv, const float* dout, const float* att,
                                           const float* qkv, int B, int T, int C, int NH,
                                           float dropout_p, uint64_t seed) {
  cuda::GpuOpScope timed(timer_, profile_ != nullptr, "attention_naive_backward",
                         op_cost::attention_naive_backward(B, T, C, NH));
  const int64_t n = int64_t{B} * T * 3 * C;
  float* t = static_cast<float*>(temp(static_cast<size_t>(n) * sizeof(float)));
  cuda::attention_backward(ctx_, TypedPtr(t), ConstTypedPtr(dout), ConstTypedPtr(att),
                           ConstTypedPtr(qkv), B, T, C, NH, dropout_p, seed);
  accumulate(TypedPtr(dqkv), ConstTypedPtr(t), n);
}
void CudaBackend::attention_decode(float* out, const float* q, const float* kcache,
                                   const float* vcache, int t, int C, int NH) {
  cuda::GpuOpScope timed(timer_, profile_ != nullptr, "attention_decode",
                         op_cost::attention_decode(t, C));
  cuda::attention_decode(ctx_, TypedPtr(out), ConstTypedPtr(q), ConstTypedPtr(kcache),
                         ConstTypedPtr(vcache), t, C, NH);
}

void CudaBackend::gelu_forward(float* out, const float* inp, int64_t N, MlpActivation kind) {
  cuda::GpuOpScope timed(timer_, profile_ != nullptr, "gelu_forward", op_cost::gelu_forward(N));
  cuda::gelu_forward(TypedPtr(out), ConstTypedPtr(inp), N, kind);
}
void CudaBackend::gelu_forward(TypedPtr out, ConstTypedPtr inp, int64_t N, MlpActivation kind) {
  cuda::GpuOpScope timed(timer_, profile_ != nullptr, "gelu_forward",
                         op_cost::gelu_forward(N, inp.dtype));
  cuda::gelu_forward(out, inp, N, kind);
}
void CudaBackend::gelu_backward(float* dinp, const float* inp, const float* dout, int64_t N,
                                MlpActivation kind) {
  cuda::GpuOpScope timed(timer_, profile_ != nullptr, "gelu_backward", op_cost::gelu_backward(N));
  gelu_backward(TypedPtr(dinp), ConstTypedPtr(inp), ConstTypedPtr(dout), N, kind);
}
void CudaBackend::gelu_backward(TypedPtr dinp, ConstTypedPtr inp, ConstTypedPtr dout, int64_t N,
                                MlpActivation kind) {
  cuda::GpuOpScope timed(timer_, profile_ != nullptr, "gelu_backward",
                         op_cost::gelu_backward(N, inp.dtype));
  const TypedPtr t{temp(static_cast<size_t>(N) * dtype_size(dinp.dtype)), dinp.dtype};
  cuda::gelu_backward(t, inp, dout, N, kind);
  accumulate(dinp, t, N);
}
void CudaBackend::gelu_backward_overwrite(TypedPtr dinp, ConstTypedPtr inp, ConstTypedPtr dout,
                                          int64_t N, MlpActivation kind) {
  cuda::GpuOpScope timed(timer_, profile_ != nullptr, "gelu_backward_overwrite",
                         op_cost::gelu_backward_overwrite(N, inp.dtype));
  cuda::gelu_backward(dinp, inp, dout, N, kind);
}
void CudaBackend::residual_forward(float* out, const float* a, const float* b, int64_t N) {
  cuda::GpuOpScope timed(timer_, profile_ != nullptr, "residual_forward",
                         op_cost::residual_forward(N));
  cuda::residual_forward(out, a, b, N);
}
void CudaBackend::skip_forward(float* out, const float* x, const float* skip, float w, int64_t N) {
  cuda::GpuOpScope timed(timer_, profile_ != nullptr, "skip_forward", op_cost::skip_forward(N));
  if (N <= 0) return;
  skip_forward_kernel<<<cuda::grid_for(N, kThreads), kThreads>>>(out, x, skip, w, N);
  NANOGPT_CUDA_CHECK_LAUNCH();
}
double CudaBackend::skip_backward(float* dskip, const float* dout, const float* skip, float w,
                                  int64_t N) {
  cuda::GpuOpScope timed(timer_, profile_ != nullptr, "skip_backward", op_cost::skip_backward(N));
  if (N <= 0) return 0.0;
  const int64_t spans = (N + kSkipSpan - 1) / kSkipSpan;
  if (partials_.size() < static_cast<size_t>(spans)) {
    partials_ = cuda::DeviceBuffer<double>(static_cast<size_t>(spans), "skip_backward's sums");
  }
  skip_backward_kernel<<<static_cast<unsigned>(spans), kThreads>>>(dskip, dout, skip, w, N,
                                                                   partials_.data());
  NANOGPT_CUDA_CHECK_LAUNCH();
  std::vector<double> sums(static_cast<size_t>(spans));
  cuda::copy_to_host(sums.data(), partials_.data(), sums.size() * sizeof(double));
  double total = 0;
  for (double s : sums) total += s;
  return total;
}
void CudaBackend::dropout_forward(float* out, const float* inp, int64_t N, float p, uint64_t seed) {
  cuda::GpuOpScope timed(timer_, profile_ != nullptr, "dropout_forward",
                         op_cost::dropout_forward(N));
  cuda::dropout_forward(TypedPtr(out), ConstTypedPtr(inp), N, p, seed);
}
void CudaBackend::dropout_backward(float* dinp, const float* dout, int64_t N, float p,
                                   uint64_t seed) {
  cuda::GpuOpScope timed(timer_, profile_ != nullptr, "dropout_backward",
                         op_cost::dropout_backward(N));
  float* t = static_cast<float*>(temp(static_cast<size_t>(N) * sizeof(float)));
  cuda::dropout_backward(TypedPtr(t), ConstTypedPtr(dout), N, p, seed);
  cuda::add_inplace(dinp, ConstTypedPtr(t), N);
}
void CudaBackend::dropout_backward_overwrite(float* dinp, const float* dout, int64_t N, float p,
                                             uint64_t seed) {
  cuda::GpuOpScope timed(timer_, profile_ != nullptr, "dropout_backward_overwrite",
                         op_cost::dropout_backward_overwrite(N));
  cuda::dropout_backward(TypedPtr(dinp), ConstTypedPtr(dout), N, p, seed);
}

void CudaBackend::crossentropy_forward(float* losses, const float* logits, const int* targets,
                                       int64_t N, int V, int Vp) {
  cuda::GpuOpScope timed(timer_, profile_ != nullptr, "crossentropy_forward",
                         op_cost::crossentropy_forward(N, Vp));
  cuda::crossentropy_forward_backward(losses, {}, ConstTypedPtr(logits), targets, 1.0f, N, V, Vp);
}
void CudaBackend::crossentropy_forward_backward(float* losses, float* dlogits, const float* logits,
                                                const int* targets, float dloss, int64_t N, int V,
                                                int Vp) {
  cuda::GpuOpScope timed(timer_, profile_ != nullptr, "crossentropy_forward_backward",
                         op_cost::crossentropy_forward_backward(N, Vp));
  cuda::crossentropy_forward_backward(losses, TypedPtr(dlogits), ConstTypedPtr(logits), targets,
                                      dloss, N, V, Vp);
}
void CudaBackend::softcap_forward(float* z, int64_t N, float cap) {
  cuda::GpuOpScope timed(timer_, profile_ != nullptr, "softcap_forward",
                         op_cost::softcap_forward(N));
  cuda::softcap_forward(z, N, cap);
}
// The kernel must not overwrite the logits it reads: in place (as the model runs it), they are
// copied to a temporary first.
void CudaBackend::crossentropy_softcap_forward_backward(float* losses, float* dlogits,
                                                        const float* logits, const int* targets,
                                                        float dloss, int64_t N, int V, int Vp,
                                                        float cap) {
  cuda::GpuOpScope timed(timer_, profile_ != nullptr, "crossentropy_softcap_forward_backward",
                         op_cost::crossentropy_softcap_forward_backward(N, Vp));
  const float* in = logits;
  if (dlogits == logits) {
    float* t = static_cast<float*>(temp(static_cast<size_t>(N) * Vp * sizeof(float)));
    cuda::copy_device(t, logits, static_cast<size_t>(N) * Vp * sizeof(float));
    in = t;
  }
  cuda::crossentropy_softcap_forward_backward(losses, TypedPtr(dlogits), in, targets, dloss, N, V,
                                              Vp, cap);
}

// QK-norm then rotary: the two kernels one after the other (in bfloat16 one rounding more than
// the CPU's fused pass, within the harness's two units of the last place).
void CudaBackend::qk_norm_rotary_forward(TypedPtr qkv, float* rstd, const float* cos,
                                         const float* sin, int64_t N, int T, int pos0, int C,
                                         int NH, float q_gain) {
  cuda::GpuOpScope timed(timer_, profile_ != nullptr, "qk_norm_rotary_forward",
                         op_cost::qk_norm_rotary_forward(N, C, qkv.dtype));
  if (rstd != nullptr) cuda::qk_rmsnorm_forward(qkv, rstd, N, C, NH);
  if (cos != nullptr) cuda::rotary_forward(qkv, cos, sin, N, T, pos0, C, NH);
  // The gain after the rotation (a rotation is linear): Q's heads gain * rot(unit head).
  if (rstd != nullptr && q_gain != 1.0f) scale_query(qkv, N, C, q_gain);
}
void CudaBackend::qk_norm_rotary_backward(TypedPtr dqkv, ConstTypedPtr qkv, const float* rstd,
                                          const float* cos, const float* sin, int64_t N, int T,
                                          int pos0, int C, int NH, float q_gain) {
  cuda::GpuOpScope timed(timer_, profile_ != nullptr, "qk_norm_rotary_backward",
                         op_cost::qk_norm_rotary_backward(N, C, dqkv.dtype, rstd != nullptr));
  ConstTypedPtr y = qkv;  // the forward's output; with a gain, its Q as the unit heads
  if (rstd != nullptr && q_gain != 1.0f) {
    const size_t bytes = static_cast<size_t>(N) * 3 * C * dtype_size(qkv.dtype);
    void* unit = temp(bytes);
    cuda::copy_device(unit, qkv.data, bytes);
    scale_query(TypedPtr(unit, qkv.dtype), N, C, 1.0f / q_gain);
    y = ConstTypedPtr(unit, qkv.dtype);
  }
  // Q's gradient through the gain is q_gain * (that of the unit heads): the norm's and the
  // rotation's backward are linear in the incoming gradient.
  if (rstd != nullptr) cuda::qk_rmsnorm_backward(dqkv, y, rstd, N, C, NH);
  if (cos != nullptr) cuda::rotary_backward(dqkv, cos, sin, N, T, pos0, C, NH);
  if (rstd != nullptr && q_gain != 1.0f) scale_query(dqkv, N, C, q_gain);
}

void CudaBackend::fill_zero(TypedPtr dst, int64_t n) {
  cuda::GpuOpScope timed(timer_, profile_ != nullptr, "fill_zero",
                         op_cost::fill_zero(n, dst.dtype));
  if (n > 0) cuda::fill_zero_device(dst.data, static_cast<size_t>(n) * dtype_size(dst.dtype));
}
void CudaBackend::convert(TypedPtr dst, ConstTypedPtr src, int64_t n) {
  cuda::GpuOpScope timed(timer_, profile_ != nullptr, "convert",
                         op_cost::convert(n, dst.dtype, src.dtype));
  cuda::convert(dst, src, n);
}

}  // namespace nanogpt
