// Element-wise ops of the CUDA backend (ops_cuda.h): the MLP activation (GELU tanh / erf, ReLU²)
// forward and backward, the residual add, add_inplace, dropout forward and backward (the CPU's
// counter-based masks), dtype conversion and scaling. Storage float32 or bfloat16, compute float32;
// every kernel is a grid-stride loop over groups of 8 elements in 16-byte accesses (vec.cuh), then
// the remaining elements one by one; unaligned pointers take the element loop throughout.
#include "kernels/cuda/cuda_util.cuh"

#include "kernels/cuda/ops_cuda.h"
#include "kernels/cuda/vec.cuh"

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

// The loops of every kernel below: element groups of 8 through 16-byte accesses (n8 of them, from
// the host's vec_plan), then the rest by element. `group(i)` handles elements i .. i+7, `one(i)`
// element i; both compute the same float32 arithmetic per element.
template <typename Group, typename One>
__device__ __forceinline__ void for_each_element(int64_t n, int64_t n8, Group group, One one) {
  const int64_t t = thread_index(), stride = thread_stride();
  for (int64_t v = t; v < n8; v += stride) group(8 * v);
  for (int64_t i = 8 * n8 + t; i < n; i += stride) one(i);
}

template <typename To, typename Ti>
__global__ void gelu_forward_kernel(To* out, const Ti* inp, int64_t n, int64_t n8,
                                    MlpActivation kind) {
  for_each_element(
      n, n8,
      [&](int64_t i) {
        float x[8];
        load8(inp + i, x);
#pragma unroll
        for (int k = 0; k < 8; ++k) x[k] = act(x[k], kind);
        store8(out + i, x);
      },
      [&](int64_t i) { out[i] = from_f32<To>(act(to_f32(inp[i]), kind)); });
}

// dinp and dout share a type (they may alias).
template <typename Td, typename Ti>
__global__ void gelu_backward_kernel(Td* dinp, const Ti* inp, const Td* dout, int64_t n,
                                     int64_t n8, MlpActivation kind) {
  for_each_element(
      n, n8,
      [&](int64_t i) {
        float x[8], d[8];
        load8(inp + i, x);
        load8(dout + i, d);
#pragma unroll
        for (int k = 0; k < 8; ++k) d[k] = d[k] * act_grad(x[k], kind);
        store8(dinp + i, d);
      },
      [&](int64_t i) {
        const float d = to_f32(dout[i]);
        dinp[i] = from_f32<Td>(d * act_grad(to_f32(inp[i]), kind));
      });
}

__global__ void residual_kernel(float* out, const float* a, const float* b, int64_t n, int64_t n8) {
  for_each_element(
      n, n8,
      [&](int64_t i) {
        float x[8], y[8];
        load8(a + i, x);
        load8(b + i, y);
#pragma unroll
        for (int k = 0; k < 8; ++k) x[k] = x[k] + y[k];
        store8(out + i, x);
      },
      [&](int64_t i) { out[i] = a[i] + b[i]; });
}

template <typename T>
__global__ void add_inplace_kernel(float* acc, const T* x, int64_t n, int64_t n8) {
  for_each_element(
      n, n8,
      [&](int64_t i) {
        float s[8], y[8];
        load8(acc + i, s);
        load8(x + i, y);
#pragma unroll
        for (int k = 0; k < 8; ++k) s[k] += y[k];
        store8(acc + i, s);
      },
      [&](int64_t i) { acc[i] += to_f32(x[i]); });
}

// out = inp * mask (p > 0): the same multiplier for forward and backward.
__device__ __forceinline__ float dropped(float x, uint64_t seed, int64_t i, float p) {
  const float mult = dropout_mult(seed, static_cast<uint64_t>(i), p);
  return mult != 0.0f ? x * mult : 0.0f;
}
template <typename To, typename Ti>
__global__ void dropout_kernel(To* out, const Ti* inp, int64_t n, int64_t n8, float p,
                               uint64_t seed) {
  for_each_element(
      n, n8,
      [&](int64_t i) {
        float x[8];
        load8(inp + i, x);
#pragma unroll
        for (int k = 0; k < 8; ++k) x[k] = dropped(x[k], seed, i + k, p);
        store8(out + i, x);
      },
      [&](int64_t i) { out[i] = from_f32<To>(dropped(to_f32(inp[i]), seed, i, p)); });
}

template <typename To, typename Ti>
__global__ void convert_kernel(To* dst, const Ti* src, int64_t n, int64_t n8) {
  for_each_element(
      n, n8,
      [&](int64_t i) {
        float x[8];
        load8(src + i, x);
        store8(dst + i, x);
      },
      [&](int64_t i) { dst[i] = from_f32<To>(to_f32(src[i])); });
}

__global__ void scale_kernel(float* x, float s, int64_t n, int64_t n8) {
  for_each_element(
      n, n8,
      [&](int64_t i) {
        float v[8];
        load8(x + i, v);
#pragma unroll
        for (int k = 0; k < 8; ++k) v[k] *= s;
        store8(x + i, v);
      },
      [&](int64_t i) { x[i] *= s; });
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
    const VecPlan plan = vec_plan(N, kThreads, {out.data, inp.data});
    gelu_forward_kernel<To, Ti><<<plan.grid, kThreads>>>(
        static_cast<To*>(out.data), static_cast<const Ti*>(inp.data), N, plan.n8, kind);
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
    const VecPlan plan = vec_plan(N, kThreads, {dinp.data, inp.data, dout.data});
    gelu_backward_kernel<Td, Ti><<<plan.grid, kThreads>>>(
        static_cast<Td*>(dinp.data), static_cast<const Ti*>(inp.data),
        static_cast<const Td*>(dout.data), N, plan.n8, kind);
    NANOGPT_CUDA_CHECK_LAUNCH();
  });
}

void residual_forward(float* out, const float* a, const float* b, int64_t N) {
  if (N <= 0) return;
  const VecPlan plan = vec_plan(N, kThreads, {out, a, b});
  residual_kernel<<<plan.grid, kThreads>>>(out, a, b, N, plan.n8);
  NANOGPT_CUDA_CHECK_LAUNCH();
}

void add_inplace(float* acc, ConstTypedPtr x, int64_t N) {
  if (N <= 0) return;
  dispatch_dtype(x.dtype, "add_inplace", [&](auto t) {
    using T = decltype(t);
    const VecPlan plan = vec_plan(N, kThreads, {acc, x.data});
    add_inplace_kernel<T><<<plan.grid, kThreads>>>(acc, static_cast<const T*>(x.data), N, plan.n8);
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
    const VecPlan plan = vec_plan(N, kThreads, {out.data, inp.data});
    dropout_kernel<To, Ti><<<plan.grid, kThreads>>>(
        static_cast<To*>(out.data), static_cast<const Ti*>(inp.data), N, plan.n8, p, seed);
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
    const VecPlan plan = vec_plan(n, kThreads, {dst.data, src.data});
    convert_kernel<To, Ti><<<plan.grid, kThreads>>>(
        static_cast<To*>(dst.data), static_cast<const Ti*>(src.data), n, plan.n8);
    NANOGPT_CUDA_CHECK_LAUNCH();
  });
}

void scale(float* x, float s, int64_t n) {
  if (n <= 0) return;
  const VecPlan plan = vec_plan(n, kThreads, {x});
  scale_kernel<<<plan.grid, kThreads>>>(x, s, n, plan.n8);
  NANOGPT_CUDA_CHECK_LAUNCH();
}

}  // namespace nanogpt::cuda
