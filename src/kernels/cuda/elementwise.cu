// Element-wise ops of the CUDA backend (ops_cuda.h): the MLP activation (GELU tanh / erf, ReLU²)
// forward and backward, the residual add, add_inplace, dropout forward and backward (the CPU's
// counter-based masks), dtype conversion and scaling. Storage float32 or bfloat16, compute float32;
// every op is one of two grid-stride kernels (map_kernel, map2_kernel) with its per-element
// function, over groups of 8 elements in 16-byte accesses (vec.cuh), then the remaining elements
// one by one; unaligned pointers take the element loop throughout.
#include "kernels/cuda/cuda_util.cuh"
#include "kernels/cuda/ops_cuda.h"
#include "kernels/cuda/vec.cuh"

namespace nanogpt::cuda {

namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float act(float x, MlpActivation kind) {
  switch (kind) {
    case MlpActivation::kRelu2:
      return x > 0.0f ? x * x : 0.0f;
    case MlpActivation::kExact:
      return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    case MlpActivation::kTanh:
    default: {
      constexpr float s = 0.79788456080286536f;  // sqrt(2/pi)
      return 0.5f * x * (1.0f + tanhf(s * (x + 0.044715f * x * x * x)));
    }
  }
}

__device__ __forceinline__ float act_grad(float x, MlpActivation kind) {
  switch (kind) {
    case MlpActivation::kRelu2:
      return x > 0.0f ? 2.0f * x : 0.0f;
    case MlpActivation::kExact: {
      constexpr float inv_sqrt_2pi = 0.39894228040143268f;  // 1/sqrt(2 pi)
      return 0.5f * (1.0f + erff(x * 0.70710678118654752f)) +
             x * expf(-0.5f * x * x) * inv_sqrt_2pi;
    }
    case MlpActivation::kTanh:
    default: {
      constexpr float s = 0.79788456080286536f;
      const float th = tanhf(s * (x + 0.044715f * x * x * x));
      return 0.5f * (1.0f + th) +
             0.5f * x * (1.0f - th * th) * s * (1.0f + 3.0f * 0.044715f * x * x);
    }
  }
}

// The two kernels every op below launches, with the op's per-element function: out[i] =
// f(a[i], i) (map_kernel) or f(a[i], b[i]) (map2_kernel), in float32. Element groups of 8 go
// through 16-byte accesses (n8 of them, from the host's vec_plan), then the rest one by one; the
// same arithmetic per element either way. out may alias a or b.
template <typename To, typename Ta, typename F>
__global__ void map_kernel(To* out, const Ta* a, int64_t n, int64_t n8, F f) {
  const int64_t t = thread_index(), stride = thread_stride();
  for (int64_t v = t; v < n8; v += stride) {
    float x[8];
    load8(a + 8 * v, x);
#pragma unroll
    for (int k = 0; k < 8; ++k) x[k] = f(x[k], 8 * v + k);
    store8(out + 8 * v, x);
  }
  for (int64_t i = 8 * n8 + t; i < n; i += stride) out[i] = from_f32<To>(f(to_f32(a[i]), i));
}

template <typename To, typename Ta, typename Tb, typename F>
__global__ void map2_kernel(To* out, const Ta* a, const Tb* b, int64_t n, int64_t n8, F f) {
  const int64_t t = thread_index(), stride = thread_stride();
  for (int64_t v = t; v < n8; v += stride) {
    float x[8], y[8];
    load8(a + 8 * v, x);
    load8(b + 8 * v, y);
#pragma unroll
    for (int k = 0; k < 8; ++k) x[k] = f(x[k], y[k]);
    store8(out + 8 * v, x);
  }
  for (int64_t i = 8 * n8 + t; i < n; i += stride) {
    out[i] = from_f32<To>(f(to_f32(a[i]), to_f32(b[i])));
  }
}

template <typename To, typename Ta, typename F>
void launch_map(To* out, const Ta* a, int64_t n, F f) {
  const VecPlan plan = vec_plan(n, kThreads, {out, a});
  map_kernel<<<plan.grid, kThreads>>>(out, a, n, plan.n8, f);
  NANOGPT_CUDA_CHECK_LAUNCH();
}

template <typename To, typename Ta, typename Tb, typename F>
void launch_map2(To* out, const Ta* a, const Tb* b, int64_t n, F f) {
  const VecPlan plan = vec_plan(n, kThreads, {out, a, b});
  map2_kernel<<<plan.grid, kThreads>>>(out, a, b, n, plan.n8, f);
  NANOGPT_CUDA_CHECK_LAUNCH();
}

// The per-element functions.
struct Activation {  // the MLP activation of x
  MlpActivation kind;
  __device__ float operator()(float x, int64_t) const { return act(x, kind); }
};
struct ActivationGrad {  // d * act'(x)
  MlpActivation kind;
  __device__ float operator()(float x, float d) const { return d * act_grad(x, kind); }
};
struct Dropout {  // x * mask(i) (p > 0): the same multiplier for forward and backward
  uint64_t seed;
  float p;
  __device__ float operator()(float x, int64_t i) const {
    const float mult = dropout_mult(seed, static_cast<uint64_t>(i), p);
    return mult != 0.0f ? x * mult : 0.0f;
  }
};
struct Identity {
  __device__ float operator()(float x, int64_t) const { return x; }
};
struct Scale {
  float s;
  __device__ float operator()(float x, int64_t) const { return x * s; }
};
struct Add {
  __device__ float operator()(float a, float b) const { return a + b; }
};

// Calls f(To{}, Ti{}) with the storage types of out and in.
template <typename F>
void dispatch_two(DType out, DType in, const char* op, F&& f) {
  dispatch_dtype(out, op, [&](auto o) { dispatch_dtype(in, op, [&](auto i) { f(o, i); }); });
}

}  // namespace

void gelu_forward(TypedPtr out, ConstTypedPtr inp, int64_t N, MlpActivation kind) {
  if (N <= 0) return;
  dispatch_two(out.dtype, inp.dtype, "gelu_forward", [&](auto o, auto i) {
    launch_map(static_cast<decltype(o)*>(out.data), static_cast<const decltype(i)*>(inp.data), N,
               Activation{kind});
  });
}

void gelu_backward(TypedPtr dinp, ConstTypedPtr inp, ConstTypedPtr dout, int64_t N,
                   MlpActivation kind) {
  if (N <= 0) return;
  CHECK(dinp.dtype == dout.dtype,
        "gelu_backward on the GPU: dinp ({}) and dout ({}) differ in dtype", dtype_name(dinp.dtype),
        dtype_name(dout.dtype));
  dispatch_two(dinp.dtype, inp.dtype, "gelu_backward", [&](auto d, auto i) {
    using Td = decltype(d);
    launch_map2(static_cast<Td*>(dinp.data), static_cast<const decltype(i)*>(inp.data),
                static_cast<const Td*>(dout.data), N, ActivationGrad{kind});
  });
}

void residual_forward(float* out, const float* a, const float* b, int64_t N) {
  if (N <= 0) return;
  launch_map2(out, a, b, N, Add{});
}

void add_inplace(float* acc, ConstTypedPtr x, int64_t N) {
  if (N <= 0) return;
  dispatch_dtype(x.dtype, "add_inplace", [&](auto t) {
    launch_map2(acc, static_cast<const float*>(acc), static_cast<const decltype(t)*>(x.data), N,
                Add{});
  });
}

void dropout_forward(TypedPtr out, ConstTypedPtr inp, int64_t N, float p, uint64_t seed) {
  if (N <= 0) return;
  if (p == 0.0f) {  // no dropout, no hashing
    if (out.data != inp.data || out.dtype != inp.dtype) convert(out, inp, N);
    return;
  }
  dispatch_two(out.dtype, inp.dtype, "dropout_forward", [&](auto o, auto i) {
    launch_map(static_cast<decltype(o)*>(out.data), static_cast<const decltype(i)*>(inp.data), N,
               Dropout{seed, p});
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
    launch_map(static_cast<decltype(o)*>(dst.data), static_cast<const decltype(i)*>(src.data), n,
               Identity{});
  });
}

void scale(float* x, float s, int64_t n) {
  if (n <= 0) return;
  launch_map(x, static_cast<const float*>(x), n, Scale{s});
}

}  // namespace nanogpt::cuda
