// Softmax cross-entropy of the CUDA backend (ops_cuda.h): one block per row of logits (grid-stride
// over rows). Pass 1: an online max / sum of exponentials over the first V columns, combined over
// the block in a fixed order (deterministic); pass 2: dlogits = dloss * (softmax - onehot), padded
// columns V..Vp-1 and ignored rows (target -1) written 0. All arithmetic float32. Rows of a multiple
// of 4 columns are read and written 4 columns at a time (vec.cuh).
#include "kernels/cuda/cuda_util.cuh"

#include <cmath>

#include "kernels/cuda/ops_cuda.h"
#include "kernels/cuda/reduce.cuh"
#include "kernels/cuda/vec.cuh"

namespace nanogpt::cuda {

namespace {

constexpr int kThreads = 512;

// (m, s) stands for s * exp(m): the merge of two such partial sums of exponentials. Symmetric in
// its arguments (bitwise), so a butterfly reduction gives every lane the same value.
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

// T: dlogits' storage, Tin: the logits'. dlogits may be the logits themselves (T == Tin): each
// thread's pass 2 reads a column before it writes that column, and every read of pass 1 precedes
// the block's barrier.
template <typename T, typename Tin>
__global__ void crossentropy_kernel(float* losses, T* dlogits, const Tin* logits,
                                    const int* targets, float dloss, int64_t N, int V, int Vp,
                                    bool vec) {
  __shared__ float red_m[kMaxWarps], red_s[kMaxWarps];
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int warps = blockDim.x / kWarpSize;
  for (int64_t row = blockIdx.x; row < N; row += gridDim.x) {
    const Tin* x = logits + row * Vp;
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
    auto take = [&](float v) {
      if (v > m) {
        s = s * expf(m - v) + 1.0f;
        m = v;
      } else {
        s += expf(v - m);
      }
    };
    const int V4 = vec ? V / 4 : 0;  // groups of 4 read as float4, the rest by element
    for (int j = threadIdx.x; j < V4; j += blockDim.x) {
      const float4 v = load4(x + 4 * j);
      take(v.x);
      take(v.y);
      take(v.z);
      take(v.w);
    }
    for (int j = 4 * V4 + threadIdx.x; j < V; j += blockDim.x) take(to_f32(x[j]));
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
    __syncthreads();  // red_* are written again by the next row
    const float lse = m + logf(s);
    // A target outside [0, V) (bad data; the CPU throws) gives a NaN loss, visible in the log.
    const bool valid = y >= 0 && y < V;
    if (threadIdx.x == 0) losses[row] = valid ? lse - to_f32(x[y]) : NAN;
    if (d) {
      auto grad = [&](int j, float v) {
        return j < V ? dloss * (expf(v - lse) - (j == y ? 1.0f : 0.0f)) : 0.0f;
      };
      const int Vp4 = vec ? Vp / 4 : 0;
      for (int j4 = threadIdx.x; j4 < Vp4; j4 += blockDim.x) {
        const int j = 4 * j4;
        // Padded columns (j >= V) may hold anything (the head's padded rows): never read them.
        const float4 v = j + 3 < V ? load4(x + j)
                                   : make_float4(j < V ? to_f32(x[j]) : 0.0f,
                                                 j + 1 < V ? to_f32(x[j + 1]) : 0.0f,
                                                 j + 2 < V ? to_f32(x[j + 2]) : 0.0f, 0.0f);
        store4(d + j, make_float4(grad(j, v.x), grad(j + 1, v.y), grad(j + 2, v.z),
                                  grad(j + 3, v.w)));
      }
      for (int j = 4 * Vp4 + threadIdx.x; j < Vp; j += blockDim.x) {
        d[j] = from_f32<T>(grad(j, j < V ? to_f32(x[j]) : 0.0f));
      }
    }
  }
}

}  // namespace

void crossentropy_forward_backward(float* losses, TypedPtr dlogits, ConstTypedPtr logits,
                                   const int* targets, float dloss, int64_t N, int V, int Vp) {
  if (N <= 0) return;
  CHECK(V > 0 && V <= Vp, "crossentropy on the GPU: need 0 < V <= Vp, got V = {}, Vp = {}", V, Vp);
  CHECK(!dlogits || dlogits.data != logits.data || dlogits.dtype == logits.dtype,
        "crossentropy on the GPU: dlogits may overwrite the logits only in their dtype ({}, not {})",
        dtype_name(logits.dtype), dtype_name(dlogits.dtype));
  const unsigned grid = static_cast<unsigned>(N < (int64_t{1} << 20) ? N : (int64_t{1} << 20));
  const DType dtype = dlogits ? dlogits.dtype : DType::kF32;
  dispatch_dtype(dtype, "crossentropy_forward_backward", [&](auto t) {
    dispatch_dtype(logits.dtype, "crossentropy_forward_backward", [&](auto tin) {
      using T = decltype(t);
      using Tin = decltype(tin);
      // Rows of a multiple of 4 columns at aligned bases: 4 columns a read and a write.
      const bool vec = Vp % 4 == 0 && all_aligned({logits.data}, 4 * dtype_size(logits.dtype)) &&
                       all_aligned({dlogits.data}, 4 * dtype_size(dtype));
      crossentropy_kernel<T, Tin><<<grid, kThreads>>>(losses, static_cast<T*>(dlogits.data),
                                                      static_cast<const Tin*>(logits.data),
                                                      targets, dloss, N, V, Vp, vec);
      NANOGPT_CUDA_CHECK_LAUNCH();
    });
  });
}

}  // namespace nanogpt::cuda
