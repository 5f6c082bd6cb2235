// The architecture options beyond GPT-2 of the CUDA backend (ops_cuda.h; meanings as
// kernels/ops_arch.h, the scalar definition kernels/ref/arch.cpp): QK-norm forward / backward (one
// warp per Q or K head vector), rotary embeddings forward / backward (one thread per rotated pair
// (i, i + HS/2)), all in place on qkv's (or dqkv's) Q and K parts, V untouched; the logit soft-cap
// (elementwise) and the fused soft-capped softmax cross-entropy (one block per row, as
// crossentropy.cu). Storage float32 or bfloat16, all arithmetic float32, each output rounded once.
#include "kernels/cuda/cuda_util.cuh"

#include <cmath>

#include "kernels/cuda/ops_cuda.h"
#include "kernels/cuda/reduce.cuh"

namespace nanogpt::cuda {

namespace {

constexpr float kQkNormEps = 1e-5f;
constexpr int kVectorThreads = 256;  // QK-norm: 8 warps, one head vector each
constexpr int kVectorsPerBlock = kVectorThreads / kWarpSize;
constexpr int kElementThreads = 256;  // rotary, soft-cap
constexpr int kRowThreads = 512;      // soft-capped cross-entropy: one block per row

// Offset in qkv (N, 3C) of head vector v = n * 2NH + j (j < 2NH: Q's heads, then K's): K's head h
// (j = NH + h) starts at C + h*HS = j*HS, so the 2NH vectors of a row are contiguous.
__device__ __forceinline__ int64_t head_offset(int64_t v, int NH, int C, int HS) {
  const int64_t n = v / (2 * NH);
  const int64_t j = v % (2 * NH);
  return n * 3 * C + j * HS;
}

// ---- QK-norm ----

// One warp per head vector (grid-stride over the N*2NH vectors): r = 1/sqrt(mean(x^2) + eps),
// x <- x * r, rstd[v] = r. Each lane rewrites only the elements it read.
template <typename T>
__global__ void qk_rmsnorm_forward_kernel(T* qkv, float* rstd, int64_t vectors, int C, int NH,
                                          int HS) {
  const int lane = threadIdx.x % kWarpSize;
  const int64_t first = blockIdx.x * int64_t{kVectorsPerBlock} + threadIdx.x / kWarpSize;
  const int64_t stride = int64_t{gridDim.x} * kVectorsPerBlock;
  for (int64_t v = first; v < vectors; v += stride) {
    T* x = qkv + head_offset(v, NH, C, HS);
    float ss = 0.0f;
    for (int i = lane; i < HS; i += kWarpSize) {
      const float a = to_f32(x[i]);
      ss += a * a;
    }
    ss = warp_sum(ss);
    const float r = 1.0f / sqrtf(ss / HS + kQkNormEps);
    for (int i = lane; i < HS; i += kWarpSize) x[i] = from_f32<T>(to_f32(x[i]) * r);
    if (lane == 0) rstd[v] = r;
  }
}

// One warp per head vector: g <- r * (g - y * mean(g * y)), g in dqkv, y in qkv.
template <typename G, typename Y>
__global__ void qk_rmsnorm_backward_kernel(G* dqkv, const Y* qkv, const float* rstd,
                                           int64_t vectors, int C, int NH, int HS) {
  const int lane = threadIdx.x % kWarpSize;
  const int64_t first = blockIdx.x * int64_t{kVectorsPerBlock} + threadIdx.x / kWarpSize;
  const int64_t stride = int64_t{gridDim.x} * kVectorsPerBlock;
  for (int64_t v = first; v < vectors; v += stride) {
    const int64_t o = head_offset(v, NH, C, HS);
    G* g = dqkv + o;
    const Y* y = qkv + o;
    float gy = 0.0f;
    for (int i = lane; i < HS; i += kWarpSize) gy += to_f32(g[i]) * to_f32(y[i]);
    const float mean = warp_sum(gy) / HS;
    const float r = rstd[v];
    for (int i = lane; i < HS; i += kWarpSize) {
      g[i] = from_f32<G>(r * (to_f32(g[i]) - to_f32(y[i]) * mean));
    }
  }
}

// ---- rotary embeddings ----

// One thread per pair (grid-stride over N * 2NH * half): pair i of head vector j of row n, at
// position p = pos0 + n % T, turns by sign * its angle: (a, b) -> (a c - b s, a s + b c).
template <typename T>
__global__ void rotary_kernel(T* qkv, const float* cos, const float* sin, int64_t pairs, int T_,
                              int pos0, int C, int NH, int HS, float sign) {
  const int half = HS / 2;
  const int64_t stride = int64_t{gridDim.x} * blockDim.x;
  for (int64_t idx = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; idx < pairs; idx += stride) {
    const int64_t i = idx % half;
    const int64_t v = idx / half;  // head vector n * 2NH + j
    const int64_t n = v / (2 * NH);
    const int64_t p = pos0 + n % T_;
    const float c = cos[p * half + i];
    const float s = sign * sin[p * half + i];
    T* x = qkv + head_offset(v, NH, C, HS);
    const float a = to_f32(x[i]), b = to_f32(x[i + half]);
    x[i] = from_f32<T>(a * c - b * s);
    x[i + half] = from_f32<T>(a * s + b * c);
  }
}

void rotate(TypedPtr qkv, const float* cos, const float* sin, int64_t N, int T, int pos0, int C,
            int NH, float sign, const char* op) {
  if (N <= 0) return;
  CHECK(NH > 0 && C % NH == 0 && (C / NH) % 2 == 0 && T > 0 && pos0 >= 0,
        "{} on the GPU: needs an even head size n_embd / n_head and T > 0, pos0 >= 0; got C {}, "
        "NH {}, T {}, pos0 {}",
        op, C, NH, T, pos0);
  const int HS = C / NH;
  const int64_t pairs = N * 2 * NH * (HS / 2);
  dispatch_dtype(qkv.dtype, op, [&](auto t) {
    using S = decltype(t);
    rotary_kernel<S><<<grid_for(pairs, kElementThreads), kElementThreads>>>(
        static_cast<S*>(qkv.data), cos, sin, pairs, T, pos0, C, NH, HS, sign);
    NANOGPT_CUDA_CHECK_LAUNCH();
  });
}

// ---- logit soft-cap ----

// cap * tanh(x / cap) as t = tanh(x / cap) (the capped logit is cap * t; its derivative 1 - t^2).
__device__ __forceinline__ float softcap_t(float x, float inv_cap) { return tanhf(x * inv_cap); }

__global__ void softcap_kernel(float* z, int64_t n, float cap, float inv_cap) {
  const int64_t stride = int64_t{gridDim.x} * blockDim.x;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += stride) {
    z[i] = cap * softcap_t(z[i], inv_cap);
  }
}

// (m, s) stands for s * exp(m): the merge of two partial sums of exponentials, symmetric in its
// arguments (bitwise), so a butterfly reduction gives every lane the same value.
__device__ __forceinline__ void merge(float& m, float& s, float m2, float s2) {
  const float mx = fmaxf(m, m2);
  if (mx == -INFINITY) {  // both empty
    s = 0.0f;
    m = mx;
    return;
  }
  s = s * expf(m - mx) + s2 * expf(m2 - mx);
  m = mx;
}

// crossentropy.cu's kernel on the capped logits z = cap * tanh(x / cap) (recomputed in each
// pass), the gradient times dz/dx = 1 - (z / cap)^2. The row's reads of logits all happen before
// its writes of dlogits by other threads (the loss reads x[y] before the second barrier), and pass
// 2 writes only the column it read: safe even were dlogits to alias logits (float32).
template <typename T>
__global__ void crossentropy_softcap_kernel(float* losses, T* dlogits, const float* logits,
                                            const int* targets, float dloss, int64_t N, int V,
                                            int Vp, float cap, float inv_cap) {
  __shared__ float red_m[kMaxWarps], red_s[kMaxWarps];
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int warps = blockDim.x / kWarpSize;
  for (int64_t row = blockIdx.x; row < N; row += gridDim.x) {
    const float* x = logits + row * Vp;
    T* d = dlogits ? dlogits + row * Vp : nullptr;
    const int y = targets[row];
    if (y == -1) {  // ignored: no loss, no gradient (uniform over the block: no barrier skipped)
      if (threadIdx.x == 0) losses[row] = 0.0f;
      if (d) {
        for (int j = threadIdx.x; j < Vp; j += blockDim.x) d[j] = from_f32<T>(0.0f);
      }
      continue;
    }
    float m = -INFINITY, s = 0.0f;
    for (int j = threadIdx.x; j < V; j += blockDim.x) {
      const float z = cap * softcap_t(x[j], inv_cap);
      if (z > m) {
        s = s * expf(m - z) + 1.0f;
        m = z;
      } else {
        s += expf(z - m);
      }
    }
    for (int o = kWarpSize / 2; o > 0; o /= 2) {
      const float m2 = __shfl_xor_sync(0xffffffffu, m, o);
      const float s2 = __shfl_xor_sync(0xffffffffu, s, o);
      merge(m, s, m2, s2);
    }
    if (lane == 0) {
      red_m[warp] = m;
      red_s[warp] = s;
    }
    __syncthreads();
    m = red_m[0];
    s = red_s[0];
    for (int w = 1; w < warps; ++w) merge(m, s, red_m[w], red_s[w]);
    const float lse = m + logf(s);
    // A target outside [0, V) (bad data; the CPU throws) gives a NaN loss, visible in the log.
    const bool valid = y >= 0 && y < V;
    if (threadIdx.x == 0) losses[row] = valid ? lse - cap * softcap_t(x[y], inv_cap) : NAN;
    __syncthreads();  // red_* are written again by the next row; x[y] read before d is written
    if (d) {
      for (int j = threadIdx.x; j < Vp; j += blockDim.x) {
        float g = 0.0f;
        if (j < V) {
          const float t = softcap_t(x[j], inv_cap);
          g = dloss * (expf(cap * t - lse) - (j == y ? 1.0f : 0.0f)) * (1.0f - t * t);
        }
        d[j] = from_f32<T>(g);
      }
    }
  }
}

}  // namespace

void qk_rmsnorm_forward(TypedPtr qkv, float* rstd, int64_t N, int C, int NH) {
  if (N <= 0) return;
  CHECK(NH > 0 && C % NH == 0, "qk_rmsnorm_forward on the GPU: n_embd {} not a multiple of "
        "n_head {}", C, NH);
  const int HS = C / NH;
  const int64_t vectors = N * 2 * NH;
  dispatch_dtype(qkv.dtype, "qk_rmsnorm_forward", [&](auto t) {
    using S = decltype(t);
    qk_rmsnorm_forward_kernel<S><<<grid_for(vectors, kVectorsPerBlock), kVectorThreads>>>(
        static_cast<S*>(qkv.data), rstd, vectors, C, NH, HS);
    NANOGPT_CUDA_CHECK_LAUNCH();
  });
}

void qk_rmsnorm_backward(TypedPtr dqkv, ConstTypedPtr qkv, const float* rstd, int64_t N, int C,
                         int NH) {
  if (N <= 0) return;
  CHECK(NH > 0 && C % NH == 0, "qk_rmsnorm_backward on the GPU: n_embd {} not a multiple of "
        "n_head {}", C, NH);
  const int HS = C / NH;
  const int64_t vectors = N * 2 * NH;
  dispatch_dtype(dqkv.dtype, "qk_rmsnorm_backward", [&](auto g) {
    using G = decltype(g);
    dispatch_dtype(qkv.dtype, "qk_rmsnorm_backward", [&](auto y) {
      using Y = decltype(y);
      qk_rmsnorm_backward_kernel<G, Y><<<grid_for(vectors, kVectorsPerBlock), kVectorThreads>>>(
          static_cast<G*>(dqkv.data), static_cast<const Y*>(qkv.data), rstd, vectors, C, NH, HS);
      NANOGPT_CUDA_CHECK_LAUNCH();
    });
  });
}

void rotary_forward(TypedPtr qkv, const float* cos, const float* sin, int64_t N, int T, int pos0,
                    int C, int NH) {
  rotate(qkv, cos, sin, N, T, pos0, C, NH, 1.0f, "rotary_forward");
}

void rotary_backward(TypedPtr dqkv, const float* cos, const float* sin, int64_t N, int T, int pos0,
                     int C, int NH) {
  rotate(dqkv, cos, sin, N, T, pos0, C, NH, -1.0f, "rotary_backward");
}

void softcap_forward(float* z, int64_t n, float cap) {
  if (n <= 0) return;
  CHECK(cap > 0, "softcap_forward on the GPU: the cap must be positive, got {}", cap);
  softcap_kernel<<<grid_for(n, kElementThreads), kElementThreads>>>(z, n, cap, 1.0f / cap);
  NANOGPT_CUDA_CHECK_LAUNCH();
}

void crossentropy_softcap_forward_backward(float* losses, TypedPtr dlogits, const float* logits,
                                           const int* targets, float dloss, int64_t N, int V,
                                           int Vp, float cap) {
  if (N <= 0) return;
  CHECK(V > 0 && V <= Vp, "crossentropy_softcap on the GPU: need 0 < V <= Vp, got V = {}, Vp = {}",
        V, Vp);
  CHECK(cap > 0, "crossentropy_softcap on the GPU: the cap must be positive, got {}", cap);
  const unsigned grid = static_cast<unsigned>(N < (int64_t{1} << 20) ? N : (int64_t{1} << 20));
  const DType dtype = dlogits ? dlogits.dtype : DType::kF32;
  dispatch_dtype(dtype, "crossentropy_softcap_forward_backward", [&](auto t) {
    using S = decltype(t);
    crossentropy_softcap_kernel<S><<<grid, kRowThreads>>>(losses, static_cast<S*>(dlogits.data),
                                                          logits, targets, dloss, N, V, Vp, cap,
                                                          1.0f / cap);
    NANOGPT_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace nanogpt::cuda
