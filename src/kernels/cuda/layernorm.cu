// LayerNorm / RMSNorm of the CUDA backend (ops_cuda.h): forward (one warp per row, two passes for
// the mean and the centered variance), the residual-fused forward, and the backward (one block per
// row at a time; dweight / dbias summed per block in shared memory, each channel owned by one
// thread, then reduced over the blocks in a fixed order: deterministic, no atomics). eps 1e-5.
#include "kernels/cuda/cuda_util.cuh"

#include "kernels/cuda/ops_cuda.h"
#include "kernels/cuda/reduce.cuh"

namespace nanogpt::cuda {

namespace {

constexpr float kEps = 1e-5f;
constexpr int kForwardThreads = 256;  // 8 warps, one row each
constexpr int kRowsPerForwardBlock = kForwardThreads / kWarpSize;

// One warp per row (grid-stride over rows). With `a`, `b` given, the row is res = a + b, written
// to `res` first (then read back by the same lanes); otherwise the row is `inp`.
template <typename T>
__global__ void layernorm_forward_kernel(T* out, float* mean, float* rstd, const float* inp,
                                         float* res, const float* a, const float* b,
                                         const float* weight, const float* bias, int64_t N, int C,
                                         bool rms) {
  const int lane = threadIdx.x % kWarpSize;
  const int64_t first = blockIdx.x * int64_t{kRowsPerForwardBlock} + threadIdx.x / kWarpSize;
  const int64_t stride = int64_t{gridDim.x} * kRowsPerForwardBlock;
  for (int64_t row = first; row < N; row += stride) {
    const int64_t off = row * C;
    const float* x = inp + off;
    float sum = 0.0f;
    if (res) {
      for (int c = lane; c < C; c += kWarpSize) {
        const float r = a[off + c] + b[off + c];
        res[off + c] = r;
        sum += r;
      }
      x = res + off;
    } else if (!rms) {
      for (int c = lane; c < C; c += kWarpSize) sum += x[c];
    }
    const float m = rms ? 0.0f : warp_sum(sum) / C;
    float var = 0.0f;
    for (int c = lane; c < C; c += kWarpSize) {
      const float d = x[c] - m;
      var += d * d;
    }
    const float s = rsqrtf(warp_sum(var) / C + kEps);
    T* o = out + off;
    for (int c = lane; c < C; c += kWarpSize) {
      const float y = (x[c] - m) * s * weight[c] + (bias ? bias[c] : 0.0f);
      o[c] = from_f32<T>(y);
    }
    if (lane == 0) {
      mean[row] = m;
      rstd[row] = s;
    }
  }
}

// One block per row at a time (grid-stride over rows). Thread t owns channels c = t, t + blockDim,
// ...: its dweight / dbias partial sums live in shared memory slots nobody else touches. At the
// end, block k writes its partials to dw_part[k, :], db_part[k, :] (db_part null: no bias).
template <typename T>
__global__ void layernorm_backward_kernel(float* dinp, float* dw_part, float* db_part,
                                          const T* dout, const float* inp, const float* weight,
                                          const float* mean, const float* rstd, int64_t N, int C,
                                          bool rms) {
  extern __shared__ float smem[];  // dw (C), db (C)
  __shared__ float red[2][2 * kMaxWarps];
  float* dw_s = smem;
  float* db_s = smem + C;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    dw_s[c] = 0.0f;
    db_s[c] = 0.0f;
  }
  int parity = 0;
  for (int64_t row = blockIdx.x; row < N; row += gridDim.x) {
    const int64_t off = row * C;
    const T* d = dout + off;
    const float* x = inp + off;
    const float m = rms ? 0.0f : mean[row];
    const float s = rstd[row];
    float2 acc = {0.0f, 0.0f};  // sum g, sum g * xhat
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
      const float g = to_f32(d[c]) * weight[c];
      acc.x += g;
      acc.y += g * ((x[c] - m) * s);
    }
    const float2 tot = block_sum2(acc, red, parity);
    parity ^= 1;
    const float g_mean = rms ? 0.0f : tot.x / C;
    const float gx_mean = tot.y / C;
    float* di = dinp ? dinp + off : nullptr;
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
      const float dc = to_f32(d[c]);
      const float xhat = (x[c] - m) * s;
      const float g = dc * weight[c];
      if (dinp) di[c] += s * (g - g_mean - xhat * gx_mean);
      dw_s[c] += dc * xhat;
      db_s[c] += dc;
    }
  }
  float* dw_row = dw_part + int64_t{blockIdx.x} * C;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    dw_row[c] = dw_s[c];
    if (db_part) db_part[int64_t{blockIdx.x} * C + c] = db_s[c];
  }
}

// dweight[c] += sum over blocks k (in order) of dw_part[k, c]; the same for dbias (nullable).
__global__ void reduce_partials_kernel(float* dweight, float* dbias, const float* dw_part,
                                       const float* db_part, int blocks, int C) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  float w = 0.0f, b = 0.0f;
  for (int k = 0; k < blocks; ++k) {
    w += dw_part[int64_t{k} * C + c];
    if (db_part) b += db_part[int64_t{k} * C + c];
  }
  if (dweight) dweight[c] += w;
  if (dbias) dbias[c] += b;
}

int multiprocessors() {
  int device = 0, sms = 0;
  NANOGPT_CUDA_CHECK(cudaGetDevice(&device));
  NANOGPT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return sms;
}

void launch_forward(TypedPtr out, float* mean, float* rstd, const float* inp, float* res,
                    const float* a, const float* b, const float* weight, const float* bias,
                    int64_t N, int C, NormKind norm) {
  if (N <= 0) return;
  CHECK(C > 0, "layernorm_forward on the GPU: C = {} must be positive", C);
  const unsigned grid = grid_for(N, kRowsPerForwardBlock);
  dispatch_dtype(out.dtype, "layernorm_forward", [&](auto t) {
    using T = decltype(t);
    layernorm_forward_kernel<T><<<grid, kForwardThreads>>>(static_cast<T*>(out.data), mean, rstd,
                                                           inp, res, a, b, weight, bias, N, C,
                                                           norm == NormKind::kRmsNorm);
    NANOGPT_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace

void layernorm_forward(TypedPtr out, float* mean, float* rstd, const float* inp,
                       const float* weight, const float* bias, int64_t N, int C, NormKind norm) {
  launch_forward(out, mean, rstd, inp, nullptr, nullptr, nullptr, weight, bias, N, C, norm);
}

void residual_layernorm_forward(float* res, TypedPtr out, float* mean, float* rstd, const float* a,
                                const float* b, const float* weight, const float* bias, int64_t N,
                                int C, NormKind norm) {
  launch_forward(out, mean, rstd, res, res, a, b, weight, bias, N, C, norm);
}

void layernorm_backward(CudaContext& ctx, float* dinp, float* dweight, float* dbias,
                        ConstTypedPtr dout, const float* inp, const float* weight,
                        const float* mean, const float* rstd, int64_t N, int C, NormKind norm) {
  if (N <= 0) return;
  CHECK(C > 0, "layernorm_backward on the GPU: C = {} must be positive", C);
  // Threads: up to 256, at least a warp, a multiple of 32 covering C when C is small.
  const int threads = C >= 256 ? 256 : (C + kWarpSize - 1) / kWarpSize * kWarpSize;
  const size_t smem = 2 * size_t(C) * sizeof(float);
  // Dynamic plus static (red) shared memory within the 48 KiB a block gets without opting in.
  CHECK(C <= 6000, "layernorm_backward on the GPU: C = {} is too wide (at most 6000)", C);
  const int64_t max_blocks = int64_t{multiprocessors()} * 4;
  const int blocks = static_cast<int>(N < max_blocks ? N : max_blocks);
  const size_t part = size_t(blocks) * C;
  float* dw_part = static_cast<float*>(ctx.scratch(2 * part * sizeof(float)));
  float* db_part = dbias ? dw_part + part : nullptr;
  dispatch_dtype(dout.dtype, "layernorm_backward", [&](auto t) {
    using T = decltype(t);
    layernorm_backward_kernel<T><<<blocks, threads, smem>>>(
        dinp, dw_part, db_part, static_cast<const T*>(dout.data), inp, weight, mean, rstd, N, C,
        norm == NormKind::kRmsNorm);
    NANOGPT_CUDA_CHECK_LAUNCH();
  });
  constexpr int kReduceThreads = 128;
  reduce_partials_kernel<<<(C + kReduceThreads - 1) / kReduceThreads, kReduceThreads>>>(
      dweight, dbias, dw_part, db_part, blocks, C);
  NANOGPT_CUDA_CHECK_LAUNCH();
}

}  // namespace nanogpt::cuda
