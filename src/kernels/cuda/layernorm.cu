// LayerNorm / RMSNorm of the CUDA backend (ops_cuda.h): forward (one warp per row, two passes for
// the mean and the centered variance), the residual-fused forward, and the backward (one block per
// row at a time; dweight / dbias summed per block in shared memory, each channel owned by one
// thread, then reduced over the blocks in a fixed order: deterministic, no atomics). eps 1e-5.
#include "kernels/cuda/cuda_util.cuh"

#include <type_traits>

#include "kernels/cuda/ops_cuda.h"
#include "kernels/cuda/reduce.cuh"
#include "kernels/cuda/vec.cuh"

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

// The vector forward (C % 4 == 0, C <= 4 * 32 * kVecs): one warp per row, lane l holding the
// float4 groups j = l, l + 32, ... (kVecs of them at most) of the row in registers, read once (or
// summed from a + b and written to res); mean, centered variance and output from the registers.
template <typename T, int kVecs>
__global__ void layernorm_forward_vec_kernel(T* out, float* mean, float* rstd, const float* inp,
                                             float* res, const float* a, const float* b,
                                             const float* weight, const float* bias, int64_t N,
                                             int C, bool rms) {
  const int lane = threadIdx.x % kWarpSize;
  const int C4 = C / 4;
  const int64_t first = blockIdx.x * int64_t{kRowsPerForwardBlock} + threadIdx.x / kWarpSize;
  const int64_t stride = int64_t{gridDim.x} * kRowsPerForwardBlock;
  for (int64_t row = first; row < N; row += stride) {
    const int64_t off = row * C;
    float4 v[kVecs];
    float sum = 0.0f;
#pragma unroll
    for (int k = 0; k < kVecs; ++k) {
      const int j = lane + kWarpSize * k;
      if (j < C4) {
        if (res) {
          const float4 x = load4(a + off + 4 * j), y = load4(b + off + 4 * j);
          v[k] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
          store4(res + off + 4 * j, v[k]);
        } else {
          v[k] = load4(inp + off + 4 * j);
        }
        sum += (v[k].x + v[k].y) + (v[k].z + v[k].w);
      }
    }
    const float m = rms ? 0.0f : warp_sum(sum) / C;
    float var = 0.0f;
#pragma unroll
    for (int k = 0; k < kVecs; ++k) {
      if (lane + kWarpSize * k < C4) {
        const float dx = v[k].x - m, dy = v[k].y - m, dz = v[k].z - m, dw = v[k].w - m;
        var += (dx * dx + dy * dy) + (dz * dz + dw * dw);
      }
    }
    const float s = rsqrtf(warp_sum(var) / C + kEps);
#pragma unroll
    for (int k = 0; k < kVecs; ++k) {
      const int j = lane + kWarpSize * k;
      if (j < C4) {
        const float4 w = load4(weight + 4 * j);
        const float4 bb = bias ? load4(bias + 4 * j) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        store4(out + off + 4 * j,
               make_float4((v[k].x - m) * s * w.x + bb.x, (v[k].y - m) * s * w.y + bb.y,
                           (v[k].z - m) * s * w.z + bb.z, (v[k].w - m) * s * w.w + bb.w));
      }
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

// The vector backward (C % 4 == 0, C <= 4 * 32 * kVecs): one warp per row (grid-stride over rows),
// lane l owning the float4 channel groups j = l, l + 32, ...: dout, xhat and dinp of the row, all
// loaded before the two warp sums, stay in registers between them, and the lane's dweight / dbias partial sums in registers
// over all the warp's rows. At the end the block's warps add theirs in warp order in shared memory
// (deterministic) and the block writes dw_part[blockIdx.x, :], db_part[blockIdx.x, :].
template <typename T, int kVecs>
__global__ void layernorm_backward_vec_kernel(float* dinp, T* dinp_copy, float* dw_part,
                                              float* db_part, const T* dout, const float* inp,
                                              const float* weight, const float* mean,
                                              const float* rstd, int64_t N, int C, bool rms) {
  extern __shared__ float4 smem4[];  // dw (C / 4), db (C / 4)
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int warps = blockDim.x / kWarpSize;
  const int C4 = C / 4;
  float4 dw[kVecs], db[kVecs];
#pragma unroll
  for (int k = 0; k < kVecs; ++k) {
    dw[k] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    db[k] = dw[k];
  }
  for (int64_t row = int64_t{blockIdx.x} * warps + warp; row < N;
       row += int64_t{gridDim.x} * warps) {
    const int64_t off = row * C;
    const float m = rms ? 0.0f : mean[row];
    const float s = rstd[row];
    float4 d[kVecs], xh[kVecs], di[kVecs];
    float sg = 0.0f, sgx = 0.0f;  // sum g, sum g * xhat (g = dout * weight)
#pragma unroll
    for (int k = 0; k < kVecs; ++k) {
      const int j = lane + kWarpSize * k;
      if (j < C4) {
        // dinp is read here too, with the row's other loads: one memory round trip per row.
        if (dinp) di[k] = load4(dinp + off + 4 * j);
        d[k] = load4(dout + off + 4 * j);
        const float4 x = load4(inp + off + 4 * j), w = load4(weight + 4 * j);
        xh[k] = make_float4((x.x - m) * s, (x.y - m) * s, (x.z - m) * s, (x.w - m) * s);
        const float gx = d[k].x * w.x, gy = d[k].y * w.y, gz = d[k].z * w.z, gw = d[k].w * w.w;
        sg += (gx + gy) + (gz + gw);
        sgx += (gx * xh[k].x + gy * xh[k].y) + (gz * xh[k].z + gw * xh[k].w);
      }
    }
    const float g_mean = rms ? 0.0f : warp_sum(sg) / C;
    const float gx_mean = warp_sum(sgx) / C;
#pragma unroll
    for (int k = 0; k < kVecs; ++k) {
      const int j = lane + kWarpSize * k;
      if (j < C4) {
        if (dinp) {
          const float4 w = load4(weight + 4 * j);
          di[k].x += s * (d[k].x * w.x - g_mean - xh[k].x * gx_mean);
          di[k].y += s * (d[k].y * w.y - g_mean - xh[k].y * gx_mean);
          di[k].z += s * (d[k].z * w.z - g_mean - xh[k].z * gx_mean);
          di[k].w += s * (d[k].w * w.w - g_mean - xh[k].w * gx_mean);
          store4(dinp + off + 4 * j, di[k]);
          // dout may be dinp_copy: this lane read its group of the row in the loop above.
          if (dinp_copy) store4(dinp_copy + off + 4 * j, di[k]);
        }
        dw[k].x += d[k].x * xh[k].x;
        dw[k].y += d[k].y * xh[k].y;
        dw[k].z += d[k].z * xh[k].z;
        dw[k].w += d[k].w * xh[k].w;
        db[k].x += d[k].x;
        db[k].y += d[k].y;
        db[k].z += d[k].z;
        db[k].w += d[k].w;
      }
    }
  }
  float4* dw_s = smem4;
  float4* db_s = smem4 + C4;
  for (int w = 0; w < warps; ++w) {
    if (warp == w) {
#pragma unroll
      for (int k = 0; k < kVecs; ++k) {
        const int j = lane + kWarpSize * k;
        if (j < C4) {
          if (w == 0) {
            dw_s[j] = dw[k];
            db_s[j] = db[k];
          } else {
            const float4 pw = dw_s[j], pb = db_s[j];
            dw_s[j] = make_float4(pw.x + dw[k].x, pw.y + dw[k].y, pw.z + dw[k].z, pw.w + dw[k].w);
            db_s[j] = make_float4(pb.x + db[k].x, pb.y + db[k].y, pb.z + db[k].z, pb.w + db[k].w);
          }
        }
      }
    }
    __syncthreads();
  }
  for (int j = threadIdx.x; j < C4; j += blockDim.x) {
    store4(dw_part + int64_t{blockIdx.x} * C + 4 * j, dw_s[j]);
    if (db_part) store4(db_part + int64_t{blockIdx.x} * C + 4 * j, db_s[j]);
  }
}

// Calls f(std::integral_constant<int, K>) with K the float4 groups per lane that C needs
// (C / 4 / 32 rounded up, within 1..max_vecs), or returns false when C is not a multiple of 4 or
// too wide for the vector kernels.
template <int kMax, typename F>
bool dispatch_vecs(int C, F&& f) {
  if (C % 4 != 0) return false;
  const int vecs = (C / 4 + kWarpSize - 1) / kWarpSize;
  bool done = false;
  auto try_one = [&](auto k) {
    if (!done && vecs <= decltype(k)::value) {
      f(k);
      done = true;
    }
  };
  try_one(std::integral_constant<int, 1>{});
  try_one(std::integral_constant<int, 2>{});
  try_one(std::integral_constant<int, 3>{});
  try_one(std::integral_constant<int, 4>{});
  try_one(std::integral_constant<int, 6>{});
  try_one(std::integral_constant<int, 8>{});
  if constexpr (kMax >= 16) {
    try_one(std::integral_constant<int, 12>{});
    try_one(std::integral_constant<int, 16>{});
  }
  return done;
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
  const bool rms = norm == NormKind::kRmsNorm;
  const bool aligned = all_aligned({inp, res, a, b, weight, bias}, 16) &&
                       all_aligned({out.data}, 4 * dtype_size(out.dtype));
  dispatch_dtype(out.dtype, "layernorm_forward", [&](auto t) {
    using T = decltype(t);
    T* o = static_cast<T*>(out.data);
    const bool vectorized = aligned && dispatch_vecs<16>(C, [&](auto k) {
      layernorm_forward_vec_kernel<T, decltype(k)::value><<<grid, kForwardThreads>>>(
          o, mean, rstd, inp, res, a, b, weight, bias, N, C, rms);
    });
    if (!vectorized) {
      layernorm_forward_kernel<T><<<grid, kForwardThreads>>>(o, mean, rstd, inp, res, a, b, weight,
                                                             bias, N, C, rms);
    }
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
                        const float* mean, const float* rstd, int64_t N, int C, NormKind norm,
                        TypedPtr dinp_copy) {
  if (N <= 0) return;
  CHECK(C > 0, "layernorm_backward on the GPU: C = {} must be positive", C);
  CHECK(!dinp_copy || (dinp && dinp_copy.dtype == dout.dtype),
        "layernorm_backward on the GPU: dinp_copy needs dinp and dout's dtype ({}, not {})",
        dtype_name(dout.dtype), dtype_name(dinp_copy.dtype));
  const bool rms = norm == NormKind::kRmsNorm;
  constexpr int kReduceThreads = 128;
  if (all_aligned({dinp, inp, weight}, 16) &&
      all_aligned({dout.data, dinp_copy.data}, 4 * dtype_size(dout.dtype))) {
    // The vector kernel: 8 warps a block, two blocks per multiprocessor at most.
    constexpr int kThreads = 256, kWarps = kThreads / kWarpSize;
    const int64_t want = (N + kWarps - 1) / kWarps;
    const size_t smem = 2 * size_t(C) * sizeof(float);
    int blocks = 0;
    float* dw_part = nullptr;
    float* db_part = nullptr;
    bool vectorized = false;
    dispatch_dtype(dout.dtype, "layernorm_backward", [&](auto t) {
      using T = decltype(t);
      vectorized = dispatch_vecs<8>(C, [&](auto k) {
        auto* kernel = layernorm_backward_vec_kernel<T, decltype(k)::value>;
        // As many blocks as fit on the GPU at once (its registers decide): one wave.
        int per_sm = 0;
        NANOGPT_CUDA_CHECK(
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, smem));
        const int64_t max_blocks = int64_t{multiprocessors()} * (per_sm > 0 ? per_sm : 1);
        blocks = static_cast<int>(want < max_blocks ? want : max_blocks);
        const size_t part = size_t(blocks) * C;
        dw_part = static_cast<float*>(ctx.scratch(2 * part * sizeof(float)));
        db_part = dbias ? dw_part + part : nullptr;
        kernel<<<blocks, kThreads, smem>>>(dinp, static_cast<T*>(dinp_copy.data), dw_part,
                                           db_part, static_cast<const T*>(dout.data), inp, weight,
                                           mean, rstd, N, C, rms);
        NANOGPT_CUDA_CHECK_LAUNCH();
      });
    });
    if (vectorized) {
      reduce_partials_kernel<<<(C + kReduceThreads - 1) / kReduceThreads, kReduceThreads>>>(
          dweight, dbias, dw_part, db_part, blocks, C);
      NANOGPT_CUDA_CHECK_LAUNCH();
      return;
    }
  }
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
        rms);
    NANOGPT_CUDA_CHECK_LAUNCH();
  });
  reduce_partials_kernel<<<(C + kReduceThreads - 1) / kReduceThreads, kReduceThreads>>>(
      dweight, dbias, dw_part, db_part, blocks, C);
  NANOGPT_CUDA_CHECK_LAUNCH();
  if (dinp_copy) convert(dinp_copy, ConstTypedPtr(dinp), N * C);
}

}  // namespace nanogpt::cuda
