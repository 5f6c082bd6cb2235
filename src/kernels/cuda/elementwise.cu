// Element-wise ops of the CUDA backend (ops_cuda.h): the MLP activation (GELU tanh / erf, ReLU²)
// forward and backward, the residual add, add_inplace, dropout forward and backward (the CPU's
// counter-based masks), dtype conversion and scaling. Storage float32 or bfloat16, compute float32;
// every kernel is a grid-stride loop over int64 element indices.
#include "kernels/cuda/cuda_util.cuh"

#include "kernels/cuda/ops_cuda.h"

namespace nanogpt::cuda {

namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float act(float x, MlpActivation kind) {
  switch (kind) {
    case MlpActivation::kRelu2: return x > 0.0f ? x * x : 0.0f;
    case MlpActivation::kExact: return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    case MlpActivation::kTanh:
    default: {
      constexpr float s = 0.79788456080286536f;  // sqrt(2/pi)
      return 0.5f * x * (1.0f + tanhf(s * (x + 0.044715f * x * x * x)));
    }
  }
}

__device__ __forceinline__ float act_grad(float x, MlpActivation kind) {
  switch (kind) {
    case MlpActivation::kRelu2: return x > 0.0f ? 2.0f * x : 0.0f;
    case MlpActivation::kExact: {
      constexpr float inv_sqrt_2pi = 0.39894228040143268f;  // 1/sqrt(2 pi)
      return 0.5f * (1.0f + erff(x * 0.70710678118654752f)) +
             x * expf(-0.5f * x * x) * inv_sqrt_2pi;
    }
    case MlpActivation::kTanh:
    default: {
      constexpr float s = 0.79788456080286536f;
      const float th = tanhf(s * (x + 0.044715f * x * x * x));
      return 0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * s * (1.0f + 3.0f * 0.044715f * x * x);
    }
  }
}

template <typename To, typename Ti>
__global__ void gelu_forward_kernel(To* out, const Ti* inp, int64_t n, MlpActivation kind) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    out[i] = from_f32<To>(act(to_f32(inp[i]), kind));
  }
}

// dinp and dout share a type (they may alias).
template <typename Td, typename Ti>
__global__ void gelu_backward_kernel(Td* dinp, const Ti* inp, const Td* dout, int64_t n,
                                     MlpActivation kind) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const float d = to_f32(dout[i]);
    dinp[i] = from_f32<Td>(d * act_grad(to_f32(inp[i]), kind));
  }
}

__global__ void residual_kernel(float* out, const float* a, const float* b, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    out[i] = a[i] + b[i];
  }
}

template <typename T>
__global__ void add_inplace_kernel(float* acc, const T* x, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    acc[i] += to_f32(x[i]);
  }
}

// out = inp * mask (p > 0): the same multiplier for forward and backward.
template <typename To, typename Ti>
__global__ void dropout_kernel(To* out, const Ti* inp, int64_t n, float p, uint64_t seed) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const float mult = dropout_mult(seed, static_cast<uint64_t>(i), p);
    out[i] = from_f32<To>(mult != 0.0f ? to_f32(inp[i]) * mult : 0.0f);
  }
}

template <typename To, typename Ti>
__global__ void convert_kernel(To* dst, const Ti* src, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    dst[i] = from_f32<To>(to_f32(src[i]));
  }
}

__global__ void scale_kernel(float* x, float s, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    x[i] *= s;
  }
}

// Calls f(To{}, Ti{}) with the storage types of out and in.
template <typename F>
void dispatch_two(DType out, DType in, const char* op, F&& f) {
  dispatch_dtype(out, op, [&](auto o) { dispatch_dtype(in, op, [&](auto i) { f(o, i); }); });
}

}  // namespace

void gelu_forward(TypedPtr out, ConstTypedPtr inp, int64_t N, MlpActivation kind) {
  if (N <= 0) return;
  dispatch_two(out.dtype, inp.dtype, "gelu_forward", [&](auto o, auto i) {
    using To = decltype(o);
    using Ti = decltype(i);
    gelu_forward_kernel<To, Ti><<<grid_for(N, kThreads), kThreads>>>(
        static_cast<To*>(out.data), static_cast<const Ti*>(inp.data), N, kind);
    NANOGPT_CUDA_CHECK_LAUNCH();
  });
}

void gelu_backward(TypedPtr dinp, ConstTypedPtr inp, ConstTypedPtr dout, int64_t N,
                   MlpActivation kind) {
  if (N <= 0) return;
  CHECK(dinp.dtype == dout.dtype, "gelu_backward on the GPU: dinp ({}) and dout ({}) differ in dtype",
        dtype_name(dinp.dtype), dtype_name(dout.dtype));
  dispatch_two(dinp.dtype, inp.dtype, "gelu_backward", [&](auto d, auto i) {
    using Td = decltype(d);
    using Ti = decltype(i);
    gelu_backward_kernel<Td, Ti><<<grid_for(N, kThreads), kThreads>>>(
        static_cast<Td*>(dinp.data), static_cast<const Ti*>(inp.data),
        static_cast<const Td*>(dout.data), N, kind);
    NANOGPT_CUDA_CHECK_LAUNCH();
  });
}

void residual_forward(float* out, const float* a, const float* b, int64_t N) {
  if (N <= 0) return;
  residual_kernel<<<grid_for(N, kThreads), kThreads>>>(out, a, b, N);
  NANOGPT_CUDA_CHECK_LAUNCH();
}

void add_inplace(float* acc, ConstTypedPtr x, int64_t N) {
  if (N <= 0) return;
  dispatch_dtype(x.dtype, "add_inplace", [&](auto t) {
    using T = decltype(t);
    add_inplace_kernel<T><<<grid_for(N, kThreads), kThreads>>>(acc, static_cast<const T*>(x.data),
                                                                 N);
    NANOGPT_CUDA_CHECK_LAUNCH();
  });
}

void dropout_forward(TypedPtr out, ConstTypedPtr inp, int64_t N, float p, uint64_t seed) {
  if (N <= 0) return;
  if (p == 0.0f) {  // no dropout, no hashing
    if (out.data != inp.data || out.dtype != inp.dtype) convert(out, inp, N);
    return;
  }
  dispatch_two(out.dtype, inp.dtype, "dropout_forward", [&](auto o, auto i) {
    using To = decltype(o);
    using Ti = decltype(i);
    dropout_kernel<To, Ti><<<grid_for(N, kThreads), kThreads>>>(
        static_cast<To*>(out.data), static_cast<const Ti*>(inp.data), N, p, seed);
    NANOGPT_CUDA_CHECK_LAUNCH();
  });
}

void dropout_backward(TypedPtr dinp, ConstTypedPtr dout, int64_t N, float p, uint64_t seed) {
  dropout_forward(dinp, dout, N, p, seed);  // the same mask and scale: dinp = dout * mult
}

void convert(TypedPtr dst, ConstTypedPtr src, int64_t n) {
  if (n <= 0) return;
  if (dst.dtype == src.dtype) {
    if (dst.data != src.data) {
      NANOGPT_CUDA_CHECK(cudaMemcpyAsync(dst.data, src.data, n * dtype_size(dst.dtype),
                                         cudaMemcpyDeviceToDevice, 0));
    }
    return;
  }
  dispatch_two(dst.dtype, src.dtype, "convert", [&](auto o, auto i) {
    using To = decltype(o);
    using Ti = decltype(i);
    convert_kernel<To, Ti><<<grid_for(n, kThreads), kThreads>>>(
        static_cast<To*>(dst.data), static_cast<const Ti*>(src.data), n);
    NANOGPT_CUDA_CHECK_LAUNCH();
  });
}

void scale(float* x, float s, int64_t n) {
  if (n <= 0) return;
  scale_kernel<<<grid_for(n, kThreads), kThreads>>>(x, s, n);
  NANOGPT_CUDA_CHECK_LAUNCH();
}

}  // namespace nanogpt::cuda
