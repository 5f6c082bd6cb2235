// The optimizer's device kernels (ops_cuda.h): the AdamW update with optim/adamw.cpp's arithmetic
// (scalars computed on the host in double, then rounded to float; fused multiply-adds where the CPU
// has them), optionally rounding the updated params into a bfloat16 copy; and sum_squares, a
// deterministic two-pass reduction in double (fixed grid, fixed order) for gradient clipping.
#include "kernels/cuda/cuda_util.cuh"

#include <cmath>

#include "kernels/cuda/device_memory.h"
#include "kernels/cuda/ops_cuda.h"
#include "kernels/cuda/reduce.cuh"

namespace nanogpt::cuda {

namespace {

constexpr int kThreads = 256;

struct Scalars {
  float grad_scale, b1, one_minus_b1, b2, one_minus_b2, bc2_sqrt, eps, keep, step_size;
};

// L = float: no low-precision copy (lowp null) or a float32 one; L = bf16: the rounded copy.
template <typename L>
__global__ void adamw_kernel(float* params, L* lowp, float* m, float* v, const float* grads,
                             int64_t n, Scalars k) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const float g = grads[i] * k.grad_scale;
    const float mi = fmaf(k.one_minus_b1, g, m[i] * k.b1);
    const float vi = fmaf(k.one_minus_b2, g * g, v[i] * k.b2);
    m[i] = mi;
    v[i] = vi;
    const float denom = sqrtf(vi) / k.bc2_sqrt + k.eps;
    const float p = fmaf(-k.step_size, mi / denom, params[i] * k.keep);
    params[i] = p;
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
  const unsigned grid = grid_for(n, kThreads);
  if (!params_lowp) {
    adamw_kernel<float><<<grid, kThreads>>>(params, nullptr, m, v, grads, n, k);
    NANOGPT_CUDA_CHECK_LAUNCH();
    return;
  }
  dispatch_dtype(params_lowp.dtype, "adamw_update", [&](auto l) {
    using L = decltype(l);
    adamw_kernel<L><<<grid, kThreads>>>(params, static_cast<L*>(params_lowp.data), m, v, grads, n,
                                        k);
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
