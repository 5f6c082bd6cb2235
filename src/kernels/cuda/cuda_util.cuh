// What every .cu of the CUDA backend shares: error checks that throw nanogpt::Error, the dtype
// dispatch (float32 / bfloat16 / float16 storage, float32 compute), grid sizing, and the
// counter-based dropout hash of core/rng.h on the device (the same masks as the CPU).
#pragma once
// NOTE: .cu files are compiled as C++17 (CMake's CUDA_STANDARD 17; by hand: nvcc -std=c++17):
// under -std=c++20 nvcc 13 rejects fmt 9's consteval format-string checks in core/check.h.

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "core/check.h"
#include "kernels/dtype.h"

namespace nanogpt::cuda {

#define NANOGPT_CUDA_CHECK(expr)                                                              \
  do {                                                                                        \
    cudaError_t nanogpt_err_ = (expr);                                                        \
    if (nanogpt_err_ != cudaSuccess)                                                          \
      ::nanogpt::fail("CUDA error in {} ({}:{}): {}", #expr, __FILE__, __LINE__,              \
                      cudaGetErrorString(nanogpt_err_));                                      \
  } while (0)

#define NANOGPT_CUBLAS_CHECK(expr)                                                            \
  do {                                                                                        \
    cublasStatus_t nanogpt_st_ = (expr);                                                      \
    if (nanogpt_st_ != CUBLAS_STATUS_SUCCESS)                                                 \
      ::nanogpt::fail("cuBLAS error in {} ({}:{}): status {} ({})", #expr, __FILE__, __LINE__, \
                      static_cast<int>(nanogpt_st_), cublasGetStatusString(nanogpt_st_));     \
  } while (0)

// After a kernel launch: a bad launch configuration surfaces here, at the call that made it.
#define NANOGPT_CUDA_CHECK_LAUNCH() NANOGPT_CUDA_CHECK(cudaGetLastError())

using bf16 = __nv_bfloat16;
using f16 = __half;

// Storage type <-> float32.
__device__ __forceinline__ float to_f32(float x) { return x; }
__device__ __forceinline__ float to_f32(bf16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float to_f32(f16 x) { return __half2float(x); }
template <typename T>
__device__ __forceinline__ T from_f32(float x);
template <>
__device__ __forceinline__ float from_f32<float>(float x) { return x; }
template <>
__device__ __forceinline__ bf16 from_f32<bf16>(float x) { return __float2bfloat16_rn(x); }
template <>
__device__ __forceinline__ f16 from_f32<f16>(float x) { return __float2half_rn(x); }

// Calls f(T{}) with T the storage type of `dtype` (float32, bfloat16 or float16).
template <typename F>
void dispatch_dtype(DType dtype, const char* op, F&& f) {
  switch (dtype) {
    case DType::kF32: f(float{}); return;
    case DType::kBF16: f(bf16{}); return;
    case DType::kF16: f(f16{}); return;
    default:
      fail("{} on the GPU takes float32, bfloat16 or float16 tensors, not {}", op,
           dtype_name(dtype));
  }
}

// Blocks of `threads` covering n items, capped for grid-stride loops.
inline unsigned grid_for(int64_t n, int threads, int64_t max_blocks = 65535LL * 16) {
  int64_t b = (n + threads - 1) / threads;
  if (b < 1) b = 1;
  return static_cast<unsigned>(b < max_blocks ? b : max_blocks);
}

// core/rng.h's splitmix64 and hash_uniform, on the device (bit-identical).
__host__ __device__ __forceinline__ uint64_t splitmix64_dev(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
__host__ __device__ __forceinline__ float hash_uniform_dev(uint64_t seed, uint64_t index) {
  uint64_t h = splitmix64_dev(seed ^ splitmix64_dev(index));
  return static_cast<float>(h >> 40) * (1.0f / 16777216.0f);
}
// The dropout multiplier of element `index`: 1/(1-p) if kept, else 0 (p > 0).
__device__ __forceinline__ float dropout_mult(uint64_t seed, uint64_t index, float p) {
  return hash_uniform_dev(seed, index) >= p ? 1.0f / (1.0f - p) : 0.0f;
}

// The dropout multiplier of attention probability (b, h, t, s) (flat index i = ((b*NH + h)*T +
// t)*T + s, per_b = NH*T*T elements per sequence), as the CPU draws it (kernels/ops_lowp.h):
// group == 0 (float32 tensors): dropout_mult(seed, i); group G > 0 (16-bit tensors, G =
// attention_batch_group(B, NH)): sequences b0 .. b0+G-1 (b0 = b - b % G) draw from seed
// splitmix64(seed + b0), with indices counted from b0's first element.
__device__ __forceinline__ float attention_dropout_mult(uint64_t seed, int group, int64_t per_b,
                                                        int64_t i, float p) {
  if (group <= 0) return dropout_mult(seed, static_cast<uint64_t>(i), p);
  const int64_t b = i / per_b;
  const int64_t b0 = b - b % group;
  return dropout_mult(splitmix64_dev(seed + static_cast<uint64_t>(b0)),
                      static_cast<uint64_t>(i - b0 * per_b), p);
}

}  // namespace nanogpt::cuda
