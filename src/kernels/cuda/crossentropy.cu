// Softmax cross-entropy of the CUDA backend (ops_cuda.h): one block per row of logits (grid-stride
// over rows). Pass 1: an online max / sum of exponentials over the first V columns, combined over
// the block in a fixed order (deterministic); pass 2: dlogits = dloss * (softmax - onehot), padded
// columns V..Vp-1 and ignored rows (target -1) written 0. All arithmetic float32.
#include "kernels/cuda/cuda_util.cuh"

#include <cmath>

#include "kernels/cuda/ops_cuda.h"
#include "kernels/cuda/reduce.cuh"

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

template <typename T>
__global__ void crossentropy_kernel(float* losses, T* dlogits, const float* logits,
                                    const int* targets, float dloss, int64_t N, int V, int Vp) {
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
      const float v = x[j];
      if (v > m) {
        s = s * expf(m - v) + 1.0f;
        m = v;
      } else {
        s += expf(v - m);
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
    __syncthreads();  // red_* are written again by the next row
    const float lse = m + logf(s);
    // A target outside [0, V) (bad data; the CPU throws) gives a NaN loss, visible in the log.
    const bool valid = y >= 0 && y < V;
    if (threadIdx.x == 0) losses[row] = valid ? lse - x[y] : NAN;
    if (d) {
      for (int j = threadIdx.x; j < Vp; j += blockDim.x) {
        float g = 0.0f;
        if (j < V) g = dloss * (expf(x[j] - lse) - (j == y ? 1.0f : 0.0f));
        d[j] = from_f32<T>(g);
      }
    }
  }
}

}  // namespace

void crossentropy_forward_backward(float* losses, TypedPtr dlogits, const float* logits,
                                   const int* targets, float dloss, int64_t N, int V, int Vp) {
  if (N <= 0) return;
  CHECK(V > 0 && V <= Vp, "crossentropy on the GPU: need 0 < V <= Vp, got V = {}, Vp = {}", V, Vp);
  const unsigned grid = static_cast<unsigned>(N < (int64_t{1} << 20) ? N : (int64_t{1} << 20));
  const DType dtype = dlogits ? dlogits.dtype : DType::kF32;
  dispatch_dtype(dtype, "crossentropy_forward_backward", [&](auto t) {
    using T = decltype(t);
    crossentropy_kernel<T><<<grid, kThreads>>>(losses, static_cast<T*>(dlogits.data), logits,
                                               targets, dloss, N, V, Vp);
    NANOGPT_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace nanogpt::cuda
