// The optimizer's device kernels (ops_cuda.h): the AdamW update with optim/adamw.cpp's arithmetic
// (scalars computed on the host in double, then rounded to float; fused multiply-adds where the CPU
// has them), optionally rounding the updated params into a bfloat16 copy; and sum_squares, a
// deterministic two-pass reduction in double (fixed grid, fixed order) for gradient clipping.
#include "kernels/cuda/cuda_util.cuh"

#include <cmath>

#include "kernels/cuda/device_memory.h"
#include "kernels/cuda/ops_cuda.h"
#include "kernels/cuda/reduce.cuh"
#include "kernels/cuda/vec.cuh"

namespace nanogpt::cuda {

namespace {

constexpr int kThreads = 256;

struct Scalars {
  float grad_scale, b1, one_minus_b1, b2, one_minus_b2, bc2_sqrt, eps, keep, step_size;
};

__device__ __forceinline__ float adamw_one(float& p, float& m, float& v, float grad,
                                           const Scalars& k) {
  const float g = grad * k.grad_scale;
  const float mi = fmaf(k.one_minus_b1, g, m * k.b1);
  const float vi = fmaf(k.one_minus_b2, g * g, v * k.b2);
  m = mi;
  v = vi;
  const float denom = sqrtf(vi) / k.bc2_sqrt + k.eps;
  p = fmaf(-k.step_size, mi / denom, p * k.keep);
  return p;
}

// L = float: no low-precision copy (lowp null) or a float32 one; L = bf16: the rounded copy.
// Groups of 4 elements in 16-byte accesses (n4 of them: 0 where a pointer is unaligned), then the
// rest one by one; the same arithmetic either way.
template <typename L>
__global__ void adamw_kernel(float* params, L* lowp, float* m, float* v, const float* grads,
                             int64_t n, int64_t n4, Scalars k) {
  const int64_t t = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  const int64_t stride = int64_t{gridDim.x} * blockDim.x;
  for (int64_t q = t; q < n4; q += stride) {
    const int64_t i = 4 * q;
    float4 p = load4(params + i), mi = load4(m + i), vi = load4(v + i);
    const float4 g = load4(grads + i);
    adamw_one(p.x, mi.x, vi.x, g.x, k);
    adamw_one(p.y, mi.y, vi.y, g.y, k);
    adamw_one(p.z, mi.z, vi.z, g.z, k);
    adamw_one(p.w, mi.w, vi.w, g.w, k);
    store4(params + i, p);
    store4(m + i, mi);
    store4(v + i, vi);
    if (lowp) store4(lowp + i, p);
  }
  for (int64_t i = 4 * n4 + t; i < n; i += stride) {
    const float p = adamw_one(params[i], m[i], v[i], grads[i], k);
    if (lowp) lowp[i] = from_f32<L>(p);
  }
}

constexpr int kSumBlocks = 1024;  // fixed: the summation order does not depend on the GPU

// partial[block] = sum of x[i]^2 over the block's grid-stride slice, in double.
__global__ void sum_squares_partial_kernel(double* partial, const float* x, int64_t n) {
  __shared__ double red[kMaxWarps];
  double acc = 0.0;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const double xi = x[i];
    acc += xi * xi;
  }
  acc = warp_sum(acc);
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  if (lane == 0) red[warp] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    double total = 0.0;
    for (int w = 0; w < static_cast<int>(blockDim.x / kWarpSize); ++w) total += red[w];
    partial[blockIdx.x] = total;
  }
}

// out[0] = sum of partial[0 .. count-1], one block, fixed order.
__global__ void sum_partials_kernel(double* out, const double* partial, int count) {
  __shared__ double red[kMaxWarps];
  double acc = 0.0;
  for (int i = threadIdx.x; i < count; i += blockDim.x) acc += partial[i];
  acc = warp_sum(acc);
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  if (lane == 0) red[warp] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    double total = 0.0;
    for (int w = 0; w < static_cast<int>(blockDim.x / kWarpSize); ++w) total += red[w];
    out[0] = total;
  }
}

}  // namespace

void adamw_update(float* params, TypedPtr params_lowp, float* m, float* v, const float* grads,
                  int64_t n, const AdamWArgs& args) {
  if (n <= 0) return;
  CHECK(args.step >= 1, "adamw_update on the GPU: step {} (steps count from 1)", args.step);
  const double t = static_cast<double>(args.step);
  const double b1 = args.beta1, b2 = args.beta2, lr = args.lr;
  Scalars k{};
  k.grad_scale = args.grad_scale;
  k.b1 = args.beta1;
  k.one_minus_b1 = static_cast<float>(1.0 - b1);
  k.b2 = args.beta2;
  k.one_minus_b2 = static_cast<float>(1.0 - b2);
  k.bc2_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(b2, t)));
  k.eps = args.eps;
  k.keep = static_cast<float>(1.0 - lr * static_cast<double>(args.weight_decay));
  k.step_size = static_cast<float>(lr / (1.0 - std::pow(b1, t)));
  const bool aligned = all_aligned({params, m, v, grads}, 16) &&
                       (!params_lowp ||
                        all_aligned({params_lowp.data}, 4 * dtype_size(params_lowp.dtype)));
  const int64_t n4 = aligned ? n / 4 : 0;
  const unsigned grid = grid_for(n4 > 0 ? n4 : n, kThreads);
  if (!params_lowp) {
    adamw_kernel<float><<<grid, kThreads>>>(params, nullptr, m, v, grads, n, n4, k);
    NANOGPT_CUDA_CHECK_LAUNCH();
    return;
  }
  dispatch_dtype(params_lowp.dtype, "adamw_update", [&](auto l) {
    using L = decltype(l);
    adamw_kernel<L><<<grid, kThreads>>>(params, static_cast<L*>(params_lowp.data), m, v, grads, n,
                                        n4, k);
    NANOGPT_CUDA_CHECK_LAUNCH();
  });
}

double sum_squares(CudaContext& ctx, const float* x, int64_t n) {
  if (n <= 0) return 0.0;
  double* partial = static_cast<double*>(ctx.scratch((kSumBlocks + 1) * sizeof(double)));
  sum_squares_partial_kernel<<<kSumBlocks, kThreads>>>(partial, x, n);
  NANOGPT_CUDA_CHECK_LAUNCH();
  sum_partials_kernel<<<1, kThreads>>>(partial + kSumBlocks, partial, kSumBlocks);
  NANOGPT_CUDA_CHECK_LAUNCH();
  double result = 0.0;
  copy_to_host(&result, partial + kSumBlocks, sizeof(double));  // waits for the kernels
  return result;
}

}  // namespace nanogpt::cuda
