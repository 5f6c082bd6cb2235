// Warp- and block-level sums for the CUDA kernels (layernorm.cu, crossentropy.cu, adamw.cu): fixed
// shuffle trees and a fixed order across warps, so every result is deterministic and every thread
// of the block gets the same value.
#pragma once

#include <cuda_runtime.h>

namespace nanogpt::cuda {

inline constexpr int kWarpSize = 32;
inline constexpr int kMaxWarps = 32;  // 1024 threads

// Sum over the 32 lanes of a warp (all lanes get the result).
template <typename S>
__device__ __forceinline__ S warp_sum(S v) {
  for (int o = kWarpSize / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Sum over the block of two values at once (blockDim.x a multiple of 32, at most 1024). `smem`:
// 2 * kMaxWarps floats per parity, i.e. float[2][2 * kMaxWarps]; `parity` alternates between calls
// (one __syncthreads per call then suffices: a warp can only write a parity's slots again after
// every warp passed the barrier of the call in between, i.e. after finishing its reads).
__device__ __forceinline__ float2 block_sum2(float2 v, float (*smem)[2 * kMaxWarps], int parity) {
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int warps = blockDim.x / kWarpSize;
  v.x = warp_sum(v.x);
  v.y = warp_sum(v.y);
  if (lane == 0) {
    smem[parity][2 * warp] = v.x;
    smem[parity][2 * warp + 1] = v.y;
  }
  __syncthreads();
  float2 total = {0.0f, 0.0f};
  for (int w = 0; w < warps; ++w) {
    total.x += smem[parity][2 * w];
    total.y += smem[parity][2 * w + 1];
  }
  return total;
}

}  // namespace nanogpt::cuda
