// CudaBackend's optimizer ops (kernels/optimizer_ops.h): AdamW, SGD, Muon's and Newton-Schulz's
// element passes, the gradient norm, clipping, the loss scaler's check and the weights' average,
// as grid-stride kernels with the CPU loops' arithmetic (kernels/cpu/optim_elementwise.cpp,
// muon_loops.cpp, adamw_update.cpp); fused multiply-adds where the CPU's AdamW has them, and, as
// the CPU's Muon loops are built, none in Muon's (__fmul_rn / __fadd_rn). One launch a tensor: a
// table of T tensors costs T launches a pass. Sums are deterministic: each span of kSumSpan
// elements is summed by one block in a fixed tree, the spans' sums are brought to the host and
// added there in order (the host waits there: the norm is a value it reads) -- except Newton-
// Schulz's normalization, whose spans' sums one GPU thread adds in the same order, so that Muon's
// step never waits for the host.
#include <vector>

#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/cuda_util.cuh"
#include "kernels/cuda/ops_cuda.h"

namespace nanogpt {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kSumSpan = 16 * 1024;  // elements a block sums

unsigned blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 65535 * 8 ? (b > 0 ? b : 1) : 65535 * 8);
}

#define NANOGPT_GRID_STRIDE(i, n)                                                    \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

template <bool kFused>
__global__ void adamw_kernel(float* p, float* g, float* m, float* v, int64_t n, AdamWConstants k,
                             float keep, float step, GradTransform x, TypedPtr lowp,
                             int64_t lowp_offset) {
  NANOGPT_GRID_STRIDE(i, n) {
    float gi = g[i];
    if constexpr (kFused) {
      gi = __fmul_rn(__fmul_rn(gi, x.unscale), x.clip);
      if (x.zero) g[i] = 0.0f;
    }
    const float mi = fmaf(k.one_minus_b1, gi, __fmul_rn(m[i], k.b1));
    const float vi = fmaf(k.one_minus_b2, __fmul_rn(gi, gi), __fmul_rn(v[i], k.b2));
    m[i] = mi;
    v[i] = vi;
    const float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(vi), k.bc2_sqrt), k.eps);
    const float pi = fmaf(-step, __fdiv_rn(mi, denom), __fmul_rn(p[i], keep));
    p[i] = pi;
    if constexpr (kFused) {
      if (lowp.data) {
        const int64_t j = lowp_offset + i;
        if (lowp.dtype == DType::kBF16) {
          static_cast<__nv_bfloat16*>(lowp.data)[j] = __float2bfloat16_rn(pi);
        } else {
          static_cast<__half*>(lowp.data)[j] = __float2half_rn(pi);
        }
      }
    }
  }
}

__global__ void sgd_kernel(float* p, const float* g, float* b, int64_t n, float lr, float wd,
                           float mu) {
  NANOGPT_GRID_STRIDE(i, n) {
    const float d = __fadd_rn(g[i], __fmul_rn(wd, p[i]));
    if (b) {
      const float bi = __fadd_rn(__fmul_rn(b[i], mu), d);
      b[i] = bi;
      p[i] = __fsub_rn(p[i], __fmul_rn(lr, bi));
    } else {
      p[i] = __fsub_rn(p[i], __fmul_rn(lr, d));
    }
  }
}

// sums[s] (one block a span of kSumSpan elements): sum of (g * unscale)^2 in double, products
// rounded to float as the CPU's; a fixed tree in the block.
__global__ void sum_sq_kernel(const float* g, int64_t n, float unscale, double* sums) {
  __shared__ double part[kThreads];
  const int64_t begin = static_cast<int64_t>(blockIdx.x) * kSumSpan;
  const int64_t end = begin + kSumSpan < n ? begin + kSumSpan : n;
  double acc = 0;
  for (int64_t i = begin + threadIdx.x; i < end; i += kThreads) {
    const float v = __fmul_rn(g[i], unscale);
    acc += static_cast<double>(v) * v;
  }
  part[threadIdx.x] = acc;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (static_cast<int>(threadIdx.x) < s) part[threadIdx.x] += part[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) sums[blockIdx.x] = part[0];
}

__global__ void scale_kernel(float* g, int64_t n, float s) {
  NANOGPT_GRID_STRIDE(i, n) g[i] = __fmul_rn(g[i], s);
}

__global__ void scale_check_kernel(float* g, int64_t n, float inv, int* bad) {
  NANOGPT_GRID_STRIDE(i, n) {
    const float v = __fmul_rn(g[i], inv);
    g[i] = v;
    if (!(fabsf(v) <= 3.4028235e38f)) *bad = 1;  // inf or nan (any writer: the same 1)
  }
}

__global__ void lerp_kernel(float* avg, const float* x, int64_t n, float decay, float keep) {
  NANOGPT_GRID_STRIDE(i, n) avg[i] = __fadd_rn(__fmul_rn(decay, avg[i]), __fmul_rn(keep, x[i]));
}

__global__ void momentum_kernel(float* buf, float* d, const float* g, int64_t n, float mu,
                                bool nesterov) {
  NANOGPT_GRID_STRIDE(j, n) {
    const float b = __fadd_rn(__fmul_rn(mu, buf[j]), g[j]);
    buf[j] = b;
    d[j] = nesterov ? __fadd_rn(g[j], __fmul_rn(mu, b)) : b;
  }
}

__global__ void update_kernel(float* p, const float* o, int64_t n, float keep, float step) {
  NANOGPT_GRID_STRIDE(j, n) p[j] = __fsub_rn(__fmul_rn(p[j], keep), __fmul_rn(step, o[j]));
}

// *scale = float(1 / (sqrt(the spans' sums added in order) + eps)): the host's order, on one
// thread, so that the norm stays in the GPU's memory.
__global__ void inverse_norm_kernel(float* scale, const double* sums, int64_t spans, double eps) {
  double total = 0;
  for (int64_t i = 0; i < spans; ++i) total += sums[i];
  *scale = static_cast<float>(1.0 / (sqrt(total) + eps));
}

__global__ void scale_by_kernel(float* x, const float* m, int64_t n, const float* scale) {
  const float s = *scale;
  NANOGPT_GRID_STRIDE(i, n) x[i] = __fmul_rn(m[i], s);
}

__global__ void scale_add_kernel(float* x, const float* y, int64_t n, float a) {
  NANOGPT_GRID_STRIDE(i, n) x[i] = __fadd_rn(__fmul_rn(a, x[i]), y[i]);
}

__global__ void combine_kernel(float* out, const float* u, const float* v, int64_t n, float a,
                               float b) {
  NANOGPT_GRID_STRIDE(i, n) out[i] = __fadd_rn(__fmul_rn(a, u[i]), __fmul_rn(b, v[i]));
}

}  // namespace

void CudaBackend::adamw_step(const AdamWArenas& a, ItemList<AdamWTensorStep> tensors,
                             const AdamWConstants& k, const GradTransform* fused,
                             TypedPtr params_lowp) {
  if (params_lowp && params_lowp.dtype != DType::kBF16 && params_lowp.dtype != DType::kF16) {
    throw UnsupportedOp(fmt::format("CUDA adamw_step: a {} weight copy (expected bfloat16 or "
                                    "float16)", dtype_name(params_lowp.dtype)));
  }
  for (const AdamWTensorStep& t : tensors) {
    const int64_t o = t.span.offset, n = t.span.numel;
    if (n <= 0) continue;
    if (fused) {
      adamw_kernel<true><<<blocks_for(n), kThreads>>>(a.params + o, a.grads + o, a.m + o, a.v + o,
                                                      n, k, t.keep, t.step_size, *fused,
                                                      params_lowp, o);
    } else {
      adamw_kernel<false><<<blocks_for(n), kThreads>>>(a.params + o, a.grads + o, a.m + o,
                                                       a.v + o, n, k, t.keep, t.step_size,
                                                       GradTransform{}, TypedPtr(), 0);
    }
    NANOGPT_CUDA_CHECK_LAUNCH();
  }
}

void CudaBackend::sgd_step(float* params, const float* grads, float* momentum,
                           ItemList<SgdTensorStep> tensors, float lr, float mu) {
  for (const SgdTensorStep& t : tensors) {
    const int64_t o = t.span.offset, n = t.span.numel;
    if (n <= 0) continue;
    sgd_kernel<<<blocks_for(n), kThreads>>>(params + o, grads + o, momentum ? momentum + o : nullptr,
                                            n, lr, t.weight_decay, mu);
    NANOGPT_CUDA_CHECK_LAUNCH();
  }
}

int64_t CudaBackend::launch_span_sums_of_squares(const float* x, ItemList<TensorSpan> tensors,
                                                 float unscale) {
  int64_t spans = 0;
  for (const TensorSpan& t : tensors) spans += (t.numel + kSumSpan - 1) / kSumSpan;
  if (spans == 0) return 0;
  if (partials_.size() < static_cast<size_t>(spans)) {
    partials_ = cuda::DeviceBuffer<double>(static_cast<size_t>(spans), "the norms' span sums");
  }
  int64_t at = 0;
  for (const TensorSpan& t : tensors) {
    const int64_t s = (t.numel + kSumSpan - 1) / kSumSpan;
    if (s == 0) continue;
    sum_sq_kernel<<<static_cast<unsigned>(s), kThreads>>>(x + t.offset, t.numel, unscale,
                                                          partials_.data() + at);
    NANOGPT_CUDA_CHECK_LAUNCH();
    at += s;
  }
  return spans;
}

double CudaBackend::sum_of_squares(const float* grads, ItemList<TensorSpan> tensors,
                                   float unscale) {
  const int64_t spans = launch_span_sums_of_squares(grads, tensors, unscale);
  if (spans == 0) return 0.0;
  std::vector<double> sums(static_cast<size_t>(spans));
  cuda::copy_to_host(sums.data(), partials_.data(), sums.size() * sizeof(double));
  double total = 0;
  for (double s : sums) total += s;
  return total;
}

void CudaBackend::scale_tensors(float* grads, ItemList<TensorSpan> tensors, float s) {
  for (const TensorSpan& t : tensors) {
    if (t.numel <= 0) continue;
    scale_kernel<<<blocks_for(t.numel), kThreads>>>(grads + t.offset, t.numel, s);
    NANOGPT_CUDA_CHECK_LAUNCH();
  }
}

bool CudaBackend::scale_and_check_finite(float* grads, int64_t n, float inv) {
  int* bad = static_cast<int*>(temp(sizeof(int)));
  cuda::fill_zero_device(bad, sizeof(int));
  if (n > 0) {
    scale_check_kernel<<<blocks_for(n), kThreads>>>(grads, n, inv, bad);
    NANOGPT_CUDA_CHECK_LAUNCH();
  }
  int host_bad = 0;
  cuda::copy_to_host(&host_bad, bad, sizeof(int));
  return host_bad == 0;
}

void CudaBackend::lerp_toward(float* avg, const float* x, int64_t n, float decay) {
  if (n <= 0) return;
  lerp_kernel<<<blocks_for(n), kThreads>>>(avg, x, n, decay, 1.0f - decay);
  NANOGPT_CUDA_CHECK_LAUNCH();
}

void CudaBackend::muon_momentum(float* buf, float* d, const float* g, int64_t n, float mu,
                                bool nesterov) {
  if (n <= 0) return;
  momentum_kernel<<<blocks_for(n), kThreads>>>(buf, d, g, n, mu, nesterov);
  NANOGPT_CUDA_CHECK_LAUNCH();
}

void CudaBackend::muon_update(float* p, const float* o, int64_t n, float keep, float step) {
  if (n <= 0) return;
  update_kernel<<<blocks_for(n), kThreads>>>(p, o, n, keep, step);
  NANOGPT_CUDA_CHECK_LAUNCH();
}

double CudaBackend::frobenius_sum_sq(const float* m, int64_t n) {
  const TensorSpan all[] = {{0, n}};
  return sum_of_squares(m, all, 1.0f);
}

void CudaBackend::normalize_frobenius(float* x, const float* m, int64_t n, double eps) {
  if (n <= 0) return;
  const TensorSpan all[] = {{0, n}};
  const int64_t spans = launch_span_sums_of_squares(m, all, 1.0f);
  if (norm_scale_.size() == 0) norm_scale_ = cuda::DeviceBuffer<float>(1, "Newton-Schulz's 1 / norm");
  inverse_norm_kernel<<<1, 1>>>(norm_scale_.data(), partials_.data(), spans, eps);
  NANOGPT_CUDA_CHECK_LAUNCH();
  scale_by_kernel<<<blocks_for(n), kThreads>>>(x, m, n, norm_scale_.data());
  NANOGPT_CUDA_CHECK_LAUNCH();
}

void CudaBackend::scale_add(float* x, const float* y, int64_t n, float a) {
  if (n <= 0) return;
  scale_add_kernel<<<blocks_for(n), kThreads>>>(x, y, n, a);
  NANOGPT_CUDA_CHECK_LAUNCH();
}

void CudaBackend::combine(float* out, const float* u, const float* v, int64_t n, float a,
                          float b) {
  if (n <= 0) return;
  combine_kernel<<<blocks_for(n), kThreads>>>(out, u, v, n, a, b);
  NANOGPT_CUDA_CHECK_LAUNCH();
}

}  // namespace nanogpt
