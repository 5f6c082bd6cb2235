// Flash attention on the GPU (ops_cuda.h: flash_attention_supported, flash_attention_forward,
// flash_attention_backward): causal multi-head attention for bfloat16 tensors of head size 64
// without any T x T matrix in memory (FlashAttention-2's decomposition). This file owns the three
// kernels and their shared-memory layouts:
//   forward   one block per (query tile of 64 rows, b*NH + h); loops over the key tiles up to the
//             diagonal: S = Q K^T (bf16 tensor cores through nvcuda::wmma, float32 accumulation),
//             online softmax in float32 (running max m, running sum l of the UNdropped
//             probabilities), O += drop(P) V; writes out = O / l and lse = log-sum-exp of the
//             scaled scores per row.
//   backward  D = rowsum(dout * out) per row (delta kernel, into ctx.scratch); then one block per
//             (key tile, b*NH + h) loops over the query tiles from the diagonal on and accumulates
//             dV = drop(P)^T dout and dK = scale dS^T Q in registers; then one block per (query
//             tile, b*NH + h) loops over the key tiles up to the diagonal for dQ = scale dS K. P is
//             recomputed from lse; dP = dout V^T; dS = P (dP M - D) (M the dropout multipliers).
//             Every output element is written by exactly one block: deterministic, no atomics.
// Q, K, V and the gradients are read and written in place in qkv / dqkv (B, T, 3C) through row
// strides (no permute pass). Dropout masks are attention_dropout_mult's for 16-bit tensors
// (groups of attention_batch_group(B, NH) sequences share a seed), hoisted per block.
//
// Within a block of 4 warps, warp w owns rows 16w .. 16w+15 of the 64-row tile it iterates for
// (queries in the forward and dQ, keys in dK/dV): the element-wise work between two products
// touches only the warp's rows, so only the tile loads need block barriers. Each row's 64 columns
// are handled by a lane pair (lane = 2 * row + half, half = column parity); rows 8..15 of a warp
// visit the column pairs in the order i ^ 1, which keeps the float32 accesses free of bank
// conflicts. P (and dS) overwrite the float32 scores they come from, as bfloat16 rows with the
// same byte stride (kLdP elements): column c's bf16 lands in bytes of float32 column c / 2 <= c.
#include "kernels/cuda/cuda_util.cuh"
#include "kernels/ops_lowp.h"

#include <mma.h>

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "kernels/cuda/ops_cuda.h"
#include "kernels/gpu_flash_rule.h"
#include "kernels/cuda/reduce.cuh"

namespace nanogpt::cuda {

namespace {

namespace wmma = nvcuda::wmma;

constexpr int kHS = 64;                     // head size (the only one supported)
constexpr int kTile = 64;                   // rows of a query tile and of a key tile
constexpr int kWarps = 4;                   // warp w owns rows 16w .. 16w+15 of the block's tile
constexpr int kThreads = kWarps * kWarpSize;
constexpr int kLdH = kHS + 8;               // row stride (elements) of a bf16 tile in shared memory
constexpr int kLdF = kTile + 4;             // row stride of a float32 tile (scores, accumulators)
constexpr int kLdP = 2 * kLdF;              // the same rows as bf16 (P, dS over the scores)
constexpr int kTileH = kTile * kLdH;        // elements of a bf16 tile
constexpr int kTileF = kTile * kLdF;        // elements of a float32 tile
constexpr int kTileHBytes = kTileH * 2;
constexpr int kTileFBytes = kTileF * 4;
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;
// The forward rescales its accumulators only when a row's max grows by more than this (log2
// units): the probabilities stay <= 2^8 against the running max in use, exact after the final
// division by l (which was accumulated against the same max).
constexpr float kRescaleThreshold = 8.0f;

// Blocks per SM the register budget targets: 3 on sm_90 (228 KB of shared memory: 3 blocks fit),
// 2 below (sm_80's 164 KB hold 2; 3 would only cost spills).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
constexpr int kMinBlocks = 3;
#else
constexpr int kMinBlocks = 2;
#endif

// Shared memory per block (bytes).
constexpr int kForwardSmem = 3 * kTileHBytes + 2 * kTileFBytes;             // Q, K, V; S/P, O
constexpr int kBackwardSmem = 4 * kTileHBytes + 2 * kTileFBytes + 2 * kTile * 4;  // + lse, D
static_assert(kForwardSmem <= 99 * 1024 && kBackwardSmem <= 99 * 1024, "shared memory per block");
static_assert(kTileHBytes % 128 == 0 && kTileFBytes % 128 == 0, "128-byte aligned regions");

using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major>;
using FragBRow = wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::row_major>;
using FragBCol = wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major>;
using FragAcc = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

// A 64 x 64 bf16 tile in flight from global memory: thread x holds the 16-byte chunks
// x + kThreads * j (row chunk / 8, columns 8 * (chunk % 8) ..).
struct TileRegs {
  uint4 v[kTile * kHS / 8 / kThreads];
};

// Rows row0 .. row0+63 of a matrix whose row r starts at base + r * stride (64 bf16, 16-byte
// aligned); rows >= n_rows read as zeros.
__device__ __forceinline__ void load_tile(TileRegs& r, const bf16* base, int64_t stride, int row0,
                                          int n_rows) {
#pragma unroll
  for (int j = 0; j < kTile * kHS / 8 / kThreads; ++j) {
    const int idx = threadIdx.x + j * kThreads;
    const int row = idx >> 3, chunk = idx & 7;
    if (row0 + row < n_rows) {
      const bf16* src = base + static_cast<int64_t>(row0 + row) * stride + chunk * 8;
      r.v[j] = __ldg(reinterpret_cast<const uint4*>(src));
    } else {
      r.v[j] = make_uint4(0u, 0u, 0u, 0u);
    }
  }
}

__device__ __forceinline__ void store_tile(bf16* s, const TileRegs& r) {
#pragma unroll
  for (int j = 0; j < kTile * kHS / 8 / kThreads; ++j) {
    const int idx = threadIdx.x + j * kThreads;
    const int row = idx >> 3, chunk = idx & 7;
    *reinterpret_cast<uint4*>(s + row * kLdH + chunk * 8) = r.v[j];
  }
}

// The dropout stream of head (b, h): multiplier of probability (t, s) is
// dropout_mult(seed, (row0 + t) * T + s, p), i.e. attention_dropout_mult(seed0, group, NH*T*T,
// ((b*NH + h)*T + t)*T + s, p) with the group's seed and base index hoisted out of the loops.
struct DropoutStream {
  uint64_t seed;
  int64_t row0;
};

__device__ __forceinline__ DropoutStream dropout_stream(uint64_t seed, int group, int b, int h,
                                                        int NH, int T) {
  DropoutStream d;
  if (group <= 0) {
    d.seed = seed;
    d.row0 = (static_cast<int64_t>(b) * NH + h) * T;
  } else {
    const int b0 = b - b % group;
    d.seed = splitmix64_dev(seed + static_cast<uint64_t>(b0));
    d.row0 = (static_cast<int64_t>(b - b0) * NH + h) * T;
  }
  return d;
}

__device__ __forceinline__ float dropout_at(const DropoutStream& d, int T, int t, int s, float p) {
  return dropout_mult(d.seed, static_cast<uint64_t>((d.row0 + t) * T + s), p);
}

// Column of the lane's i-th element (i < 32, unrolled): 2 * (i ^ hi) + half for a row of the warp
// with hi = (row >= 8), written as 2 * i plus one of two per-lane offsets (lane_col_offsets) so
// that every access is a base register plus an immediate.
__device__ __forceinline__ int lane_col(int i, int2 off) {
  return 2 * i + ((i & 1) ? off.y : off.x);
}
__device__ __forceinline__ int2 lane_col_offsets(int hi, int half) {
  return make_int2(half + 2 * hi, half - 2 * hi);
}

// ---- forward ----

// grid (B*NH, ceil(T/64)): blockIdx.x = b*NH + h, query tile gridDim.y - 1 - blockIdx.y (the
// longest rows first). out (B,T,C) bf16, lse (B,NH,T) float32.
__global__ void __launch_bounds__(kThreads, kMinBlocks) flash_forward_kernel(bf16* out, float* lse,
                                                                 const bf16* qkv, int T, int NH,
                                                                 float p, uint64_t seed,
                                                                 int group) {
  extern __shared__ __align__(128) unsigned char smem[];
  bf16* sQ = reinterpret_cast<bf16*>(smem);
  bf16* sK = sQ + kTileH;
  bf16* sV = sK + kTileH;
  float* sS = reinterpret_cast<float*>(smem + 3 * kTileHBytes);
  float* sO = sS + kTileF;

  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int bh = blockIdx.x;
  const int b = bh / NH, h = bh % NH;
  const int qt = gridDim.y - 1 - blockIdx.y;
  const int q0 = qt * kTile;
  const int C = NH * kHS;
  const int64_t stride = 3LL * C;
  const bf16* qbase = qkv + static_cast<int64_t>(b) * T * stride + h * kHS;
  const bf16* kbase = qbase + C;
  const bf16* vbase = qbase + 2 * C;
  const DropoutStream drop = dropout_stream(seed, group, b, h, NH, T);
  const bool dropout = p > 0.0f;
  const float scale_log2 = kLog2e / 8.0f;  // 1/sqrt(64) in log2 units

  // This lane's row (of the warp's 16) and column parity.
  const int r_local = lane >> 1, half = lane & 1, hi = r_local >> 3;
  const int2 cols = lane_col_offsets(hi, half);
  const int row = warp * 16 + r_local;
  const int t = q0 + row;
  float* sSw = sS + warp * 16 * kLdF;  // the warp's rows of S (then P, as bf16)
  float* sOw = sO + warp * 16 * kLdF;
  float* srow = sSw + r_local * kLdF;
  bf16* prow = reinterpret_cast<bf16*>(srow);

  TileRegs rq, rk, rv;
  load_tile(rq, qbase, stride, q0, T);
  load_tile(rk, kbase, stride, 0, T);
  load_tile(rv, vbase, stride, 0, T);
  store_tile(sQ, rq);

  float m = -INFINITY, l = 0.0f;  // running max (log2 units, scaled) and sum of this row
  FragAcc o[4];
#pragma unroll
  for (int n = 0; n < 4; ++n) wmma::fill_fragment(o[n], 0.0f);

  for (int kt = 0; kt <= qt; ++kt) {
    const int k0 = kt * kTile;
    __syncthreads();  // every warp is done with the previous K, V tiles
    store_tile(sK, rk);
    store_tile(sV, rv);
    if (kt < qt) {
      load_tile(rk, kbase, stride, k0 + kTile, T);
      load_tile(rv, vbase, stride, k0 + kTile, T);
    }
    __syncthreads();

    // S (16 x 64, the warp's rows) = Q K^T: K (s, d) row-major is K^T col-major.
    {
      FragAcc acc[4];
#pragma unroll
      for (int n = 0; n < 4; ++n) wmma::fill_fragment(acc[n], 0.0f);
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        FragA qf;
        wmma::load_matrix_sync(qf, sQ + warp * 16 * kLdH + k * 16, kLdH);
#pragma unroll
        for (int n = 0; n < 4; ++n) {
          FragBCol kf;
          wmma::load_matrix_sync(kf, sK + n * 16 * kLdH + k * 16, kLdH);
          wmma::mma_sync(acc[n], qf, kf, acc[n]);
        }
      }
#pragma unroll
      for (int n = 0; n < 4; ++n)
        wmma::store_matrix_sync(sSw + n * 16, acc[n], kLdF, wmma::mem_row_major);
    }
    __syncwarp();

    // Online softmax of the row: scaled scores in log2 units, causal mask on the diagonal tile.
    const bool diag = kt == qt;
    float x[32];
    float mx = -INFINITY;
#pragma unroll
    for (int i = 0; i < 32; ++i) {
      const int c = lane_col(i, cols);
      float v = srow[c] * scale_log2;
      if (diag && c > row) v = -INFINITY;
      x[i] = v;
      mx = fmaxf(mx, v);
    }
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    // Tile 0 holds column s = 0 <= t of every row: m is finite from then on.
    float alpha = 1.0f;
    bool rescale = false;
    if (kt == 0) {
      m = mx;
    } else if (mx > m + kRescaleThreshold) {
      alpha = exp2f(m - mx);
      m = mx;
      rescale = true;
    }
    __syncwarp();  // both lanes of the row have read S before P overwrites it
    float rs = 0.0f;
#pragma unroll
    for (int i = 0; i < 32; ++i) {
      const int c = lane_col(i, cols);
      const float pv = exp2f(x[i] - m);
      rs += pv;
      const float pd = dropout ? pv * dropout_at(drop, T, t, k0 + c, p) : pv;
      prow[c] = __float2bfloat16_rn(pd);
    }
    rs += __shfl_xor_sync(0xffffffffu, rs, 1);
    l = l * alpha + rs;

    // Rows whose max grew: O *= alpha through shared memory (the fragments' layout is opaque).
    if (__any_sync(0xffffffffu, rescale)) {
#pragma unroll
      for (int n = 0; n < 4; ++n)
        wmma::store_matrix_sync(sOw + n * 16, o[n], kLdF, wmma::mem_row_major);
      __syncwarp();
      if (rescale) {
        float* orow = sOw + r_local * kLdF;
#pragma unroll
        for (int i = 0; i < 32; ++i) orow[lane_col(i, cols)] *= alpha;
      }
      __syncwarp();
#pragma unroll
      for (int n = 0; n < 4; ++n)
        wmma::load_matrix_sync(o[n], sOw + n * 16, kLdF, wmma::mem_row_major);
    }
    __syncwarp();  // P complete before the warp loads it

    // O += P V: P (16 x 64, bf16 over the scores), V (s, d) row-major.
    {
      const bf16* sP = reinterpret_cast<const bf16*>(sSw);
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        FragA pf;
        wmma::load_matrix_sync(pf, sP + k * 16, kLdP);
#pragma unroll
        for (int n = 0; n < 4; ++n) {
          FragBRow vf;
          wmma::load_matrix_sync(vf, sV + k * 16 * kLdH + n * 16, kLdH);
          wmma::mma_sync(o[n], pf, vf, o[n]);
        }
      }
    }
  }

  // out = O / l (rows t < T), lse = (m + log2 l) ln 2.
#pragma unroll
  for (int n = 0; n < 4; ++n) {
    wmma::store_matrix_sync(sOw + n * 16, o[n], kLdF, wmma::mem_row_major);
  }
  const float inv_l = 1.0f / l;
  __syncwarp();
  for (int rr = 0; rr < 16; ++rr) {
    const float inv = __shfl_sync(0xffffffffu, inv_l, 2 * rr);
    const int tt = q0 + warp * 16 + rr;
    if (tt < T) {
      const float2 v = *reinterpret_cast<const float2*>(sOw + rr * kLdF + 2 * lane);
      *reinterpret_cast<__nv_bfloat162*>(out + (static_cast<int64_t>(b) * T + tt) * C + h * kHS +
                                         2 * lane) = __floats2bfloat162_rn(v.x * inv, v.y * inv);
    }
  }
  if (half == 0 && t < T) lse[static_cast<int64_t>(bh) * T + t] = (m + log2f(l)) * kLn2;
}

// ---- backward ----

// D[(b*NH + h)*T + t] = sum_c dout[b, t, h*64 + c] * out[b, t, h*64 + c]; one warp per row.
__global__ void flash_delta_kernel(float* D, const bf16* dout, const bf16* out, int64_t rows, int T,
                                   int NH) {
  const int lane = threadIdx.x % kWarpSize;
  const int64_t r = static_cast<int64_t>(blockIdx.x) * (blockDim.x / kWarpSize) +
                    threadIdx.x / kWarpSize;
  if (r >= rows) return;
  const int64_t t = r % T, bh = r / T;
  const int64_t b = bh / NH, h = bh % NH;
  const int64_t off = (b * T + t) * NH * kHS + h * kHS + 2 * lane;
  const float2 d = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(dout + off));
  const float2 o = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(out + off));
  const float sum = warp_sum(d.x * o.x + d.y * o.y);
  if (lane == 0) D[r] = sum;
}

// ---- dK, dV ----

// grid (B*NH, ceil(T/64)): blockIdx.x = b*NH + h, key tile blockIdx.y (the first key tiles have
// the most query tiles). dqkv's K and V parts of the tile's rows are written (overwrite).
__global__ void __launch_bounds__(kThreads, kMinBlocks) flash_backward_dkdv_kernel(
    bf16* dqkv, const bf16* dout, const float* lse, const float* Dvec, const bf16* qkv, int T,
    int NH, float p, uint64_t seed, int group) {
  extern __shared__ __align__(128) unsigned char smem[];
  bf16* sK = reinterpret_cast<bf16*>(smem);
  bf16* sV = sK + kTileH;
  bf16* sQ = sV + kTileH;
  bf16* sdO = sQ + kTileH;
  float* sS = reinterpret_cast<float*>(smem + 4 * kTileHBytes);
  float* sP = sS + kTileF;  // dP
  float* sLse = sP + kTileF;  // lse of the query tile's rows, log2 units
  float* sD = sLse + kTile;

  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int bh = blockIdx.x;
  const int b = bh / NH, h = bh % NH;
  const int kt = blockIdx.y;
  const int nq = gridDim.y;
  const int k0 = kt * kTile;
  const int C = NH * kHS;
  const int64_t stride = 3LL * C;
  const bf16* qbase = qkv + static_cast<int64_t>(b) * T * stride + h * kHS;
  const bf16* kbase = qbase + C;
  const bf16* vbase = qbase + 2 * C;
  const bf16* dobase = dout + static_cast<int64_t>(b) * T * C + h * kHS;
  const float* lse_bh = lse + static_cast<int64_t>(bh) * T;
  const float* D_bh = Dvec + static_cast<int64_t>(bh) * T;
  const DropoutStream drop = dropout_stream(seed, group, b, h, NH, T);
  const bool dropout = p > 0.0f;
  const float scale = 0.125f;  // 1/sqrt(64)
  const float scale_log2 = kLog2e * scale;

  const int r_local = lane >> 1, half = lane & 1, hi = r_local >> 3;
  const int2 cols = lane_col_offsets(hi, half);
  const int s = k0 + warp * 16 + r_local;  // this lane's key row
  float* sSw = sS + warp * 16 * kLdF;
  float* sPw = sP + warp * 16 * kLdF;
  float* arow = sSw + r_local * kLdF;
  float* brow = sPw + r_local * kLdF;
  bf16* pm_row = reinterpret_cast<bf16*>(arow);
  bf16* ds_row = reinterpret_cast<bf16*>(brow);

  {
    TileRegs rk, rv;
    load_tile(rk, kbase, stride, k0, T);
    load_tile(rv, vbase, stride, k0, T);
    store_tile(sK, rk);
    store_tile(sV, rv);
  }
  TileRegs rq, rdo;
  load_tile(rq, qbase, stride, k0, T);
  load_tile(rdo, dobase, C, k0, T);
  float lse_next = 0.0f, d_next = 0.0f;
  if (threadIdx.x < kTile && k0 + static_cast<int>(threadIdx.x) < T) {
    lse_next = lse_bh[k0 + threadIdx.x] * kLog2e;
    d_next = D_bh[k0 + threadIdx.x];
  }

  FragAcc dk[4], dv[4];
#pragma unroll
  for (int n = 0; n < 4; ++n) {
    wmma::fill_fragment(dk[n], 0.0f);
    wmma::fill_fragment(dv[n], 0.0f);
  }

  for (int qt = kt; qt < nq; ++qt) {
    const int q0 = qt * kTile;
    __syncthreads();  // every warp is done with the previous Q, dO tiles
    store_tile(sQ, rq);
    store_tile(sdO, rdo);
    if (threadIdx.x < kTile) {
      sLse[threadIdx.x] = lse_next;
      sD[threadIdx.x] = d_next;
    }
    if (qt + 1 < nq) {
      load_tile(rq, qbase, stride, q0 + kTile, T);
      load_tile(rdo, dobase, C, q0 + kTile, T);
      if (threadIdx.x < kTile) {
        const int tn = q0 + kTile + static_cast<int>(threadIdx.x);
        lse_next = tn < T ? lse_bh[tn] * kLog2e : 0.0f;
        d_next = tn < T ? D_bh[tn] : 0.0f;
      }
    }
    __syncthreads();

    // S^T (16 key rows x 64 query columns) = K Q^T and dP^T = V dO^T: Q, dO (t, d) row-major
    // are Q^T, dO^T col-major. (One accumulator at a time: this kernel's registers are tight.)
#pragma unroll
    for (int n = 0; n < 4; ++n) {
      FragAcc acc;
      wmma::fill_fragment(acc, 0.0f);
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        FragA kf;
        FragBCol qf;
        wmma::load_matrix_sync(kf, sK + warp * 16 * kLdH + k * 16, kLdH);
        wmma::load_matrix_sync(qf, sQ + n * 16 * kLdH + k * 16, kLdH);
        wmma::mma_sync(acc, kf, qf, acc);
      }
      wmma::store_matrix_sync(sSw + n * 16, acc, kLdF, wmma::mem_row_major);
    }
#pragma unroll
    for (int n = 0; n < 4; ++n) {
      FragAcc acc;
      wmma::fill_fragment(acc, 0.0f);
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        FragA vf;
        FragBCol of;
        wmma::load_matrix_sync(vf, sV + warp * 16 * kLdH + k * 16, kLdH);
        wmma::load_matrix_sync(of, sdO + n * 16 * kLdH + k * 16, kLdH);
        wmma::mma_sync(acc, vf, of, acc);
      }
      wmma::store_matrix_sync(sPw + n * 16, acc, kLdF, wmma::mem_row_major);
    }
    __syncwarp();

    // P^T = exp(scale S^T - lse) (0 where t < s or t >= T); P M over S, dS = P (dP M - D) over dP.
    // In 4 chunks of 8 column pairs: after the __syncwarp both lanes of the row have read the
    // chunk, whose bf16 results land in float32 columns c / 2 < 16 (chunk + 1), i.e. columns
    // already read and never read again.
#pragma unroll
    for (int chunk = 0; chunk < 4; ++chunk) {
      float sv[8], dpv[8];
#pragma unroll
      for (int ii = 0; ii < 8; ++ii) {
        const int c = lane_col(chunk * 8 + ii, cols);
        sv[ii] = arow[c];
        dpv[ii] = brow[c];
      }
      __syncwarp();
#pragma unroll
      for (int ii = 0; ii < 8; ++ii) {
        const int c = lane_col(chunk * 8 + ii, cols);
        const int t = q0 + c;
        float pv = exp2f(sv[ii] * scale_log2 - sLse[c]);
        if (t < s || t >= T) pv = 0.0f;
        const float mult = dropout ? dropout_at(drop, T, t, s, p) : 1.0f;
        pm_row[c] = __float2bfloat16_rn(pv * mult);
        ds_row[c] = __float2bfloat16_rn(pv * (dpv[ii] * mult - sD[c]));
      }
    }
    __syncwarp();

    // dV += (P M)^T dO, dK += dS^T Q (scaled at the end): the key rows' bf16 tiles times
    // dO, Q (t, d) row-major.
    {
      const bf16* sPM = reinterpret_cast<const bf16*>(sSw);
      const bf16* sdS = reinterpret_cast<const bf16*>(sPw);
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        FragA af;
        wmma::load_matrix_sync(af, sPM + k * 16, kLdP);
#pragma unroll
        for (int n = 0; n < 4; ++n) {
          FragBRow bfr;
          wmma::load_matrix_sync(bfr, sdO + k * 16 * kLdH + n * 16, kLdH);
          wmma::mma_sync(dv[n], af, bfr, dv[n]);
        }
      }
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        FragA af;
        wmma::load_matrix_sync(af, sdS + k * 16, kLdP);
#pragma unroll
        for (int n = 0; n < 4; ++n) {
          FragBRow bfr;
          wmma::load_matrix_sync(bfr, sQ + k * 16 * kLdH + n * 16, kLdH);
          wmma::mma_sync(dk[n], af, bfr, dk[n]);
        }
      }
    }
    // (the next iteration's __syncthreads orders these loads before the stores over S, dP)
  }

  // dK = scale dS^T Q and dV into dqkv's K, V parts, rows s < T.
  __syncwarp();
#pragma unroll
  for (int n = 0; n < 4; ++n) {
#pragma unroll
    for (int e = 0; e < dk[n].num_elements; ++e) dk[n].x[e] *= scale;
    wmma::store_matrix_sync(sSw + n * 16, dk[n], kLdF, wmma::mem_row_major);
    wmma::store_matrix_sync(sPw + n * 16, dv[n], kLdF, wmma::mem_row_major);
  }
  __syncwarp();
  for (int rr = 0; rr < 16; ++rr) {
    const int ss = k0 + warp * 16 + rr;
    if (ss >= T) break;
    bf16* drow = dqkv + (static_cast<int64_t>(b) * T + ss) * stride + h * kHS + 2 * lane;
    const float2 gk = *reinterpret_cast<const float2*>(sSw + rr * kLdF + 2 * lane);
    const float2 gv = *reinterpret_cast<const float2*>(sPw + rr * kLdF + 2 * lane);
    *reinterpret_cast<__nv_bfloat162*>(drow + C) = __floats2bfloat162_rn(gk.x, gk.y);
    *reinterpret_cast<__nv_bfloat162*>(drow + 2 * C) = __floats2bfloat162_rn(gv.x, gv.y);
  }
}

// ---- dQ ----

// grid (B*NH, ceil(T/64)): blockIdx.x = b*NH + h, query tile gridDim.y - 1 - blockIdx.y. dqkv's Q
// part of the tile's rows is written (overwrite).
__global__ void __launch_bounds__(kThreads, kMinBlocks) flash_backward_dq_kernel(
    bf16* dqkv, const bf16* dout, const float* lse, const float* Dvec, const bf16* qkv, int T,
    int NH, float p, uint64_t seed, int group) {
  extern __shared__ __align__(128) unsigned char smem[];
  bf16* sQ = reinterpret_cast<bf16*>(smem);
  bf16* sdO = sQ + kTileH;
  bf16* sK = sdO + kTileH;
  bf16* sV = sK + kTileH;
  float* sS = reinterpret_cast<float*>(smem + 4 * kTileHBytes);
  float* sP = sS + kTileF;  // dP

  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int bh = blockIdx.x;
  const int b = bh / NH, h = bh % NH;
  const int qt = gridDim.y - 1 - blockIdx.y;
  const int q0 = qt * kTile;
  const int C = NH * kHS;
  const int64_t stride = 3LL * C;
  const bf16* qbase = qkv + static_cast<int64_t>(b) * T * stride + h * kHS;
  const bf16* kbase = qbase + C;
  const bf16* vbase = qbase + 2 * C;
  const bf16* dobase = dout + static_cast<int64_t>(b) * T * C + h * kHS;
  const DropoutStream drop = dropout_stream(seed, group, b, h, NH, T);
  const bool dropout = p > 0.0f;
  const float scale = 0.125f;  // 1/sqrt(64)
  const float scale_log2 = kLog2e * scale;

  const int r_local = lane >> 1, half = lane & 1, hi = r_local >> 3;
  const int2 cols = lane_col_offsets(hi, half);
  const int row = warp * 16 + r_local;
  const int t = q0 + row;  // this lane's query row
  float* sSw = sS + warp * 16 * kLdF;
  float* sPw = sP + warp * 16 * kLdF;
  float* arow = sSw + r_local * kLdF;
  const float* brow = sPw + r_local * kLdF;
  bf16* ds_row = reinterpret_cast<bf16*>(arow);
  const bool row_valid = t < T;
  const float lse_t = row_valid ? lse[static_cast<int64_t>(bh) * T + t] * kLog2e : 0.0f;
  const float d_t = row_valid ? Dvec[static_cast<int64_t>(bh) * T + t] : 0.0f;

  {
    TileRegs rq, rdo;
    load_tile(rq, qbase, stride, q0, T);
    load_tile(rdo, dobase, C, q0, T);
    store_tile(sQ, rq);
    store_tile(sdO, rdo);
  }
  TileRegs rk, rv;
  load_tile(rk, kbase, stride, 0, T);
  load_tile(rv, vbase, stride, 0, T);

  FragAcc dq[4];
#pragma unroll
  for (int n = 0; n < 4; ++n) wmma::fill_fragment(dq[n], 0.0f);

  for (int kt = 0; kt <= qt; ++kt) {
    const int k0 = kt * kTile;
    __syncthreads();  // every warp is done with the previous K, V tiles
    store_tile(sK, rk);
    store_tile(sV, rv);
    if (kt < qt) {
      load_tile(rk, kbase, stride, k0 + kTile, T);
      load_tile(rv, vbase, stride, k0 + kTile, T);
    }
    __syncthreads();

    // S (16 query rows x 64 key columns) = Q K^T, dP = dO V^T: K, V (s, d) row-major are
    // K^T, V^T col-major.
    {
      FragAcc acc[4];
#pragma unroll
      for (int n = 0; n < 4; ++n) wmma::fill_fragment(acc[n], 0.0f);
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        FragA qf;
        wmma::load_matrix_sync(qf, sQ + warp * 16 * kLdH + k * 16, kLdH);
#pragma unroll
        for (int n = 0; n < 4; ++n) {
          FragBCol kf;
          wmma::load_matrix_sync(kf, sK + n * 16 * kLdH + k * 16, kLdH);
          wmma::mma_sync(acc[n], qf, kf, acc[n]);
        }
      }
#pragma unroll
      for (int n = 0; n < 4; ++n) {
        wmma::store_matrix_sync(sSw + n * 16, acc[n], kLdF, wmma::mem_row_major);
        wmma::fill_fragment(acc[n], 0.0f);
      }
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        FragA of;
        wmma::load_matrix_sync(of, sdO + warp * 16 * kLdH + k * 16, kLdH);
#pragma unroll
        for (int n = 0; n < 4; ++n) {
          FragBCol vf;
          wmma::load_matrix_sync(vf, sV + n * 16 * kLdH + k * 16, kLdH);
          wmma::mma_sync(acc[n], of, vf, acc[n]);
        }
      }
#pragma unroll
      for (int n = 0; n < 4; ++n)
        wmma::store_matrix_sync(sPw + n * 16, acc[n], kLdF, wmma::mem_row_major);
    }
    __syncwarp();

    // P = exp(scale S - lse) (0 where s > t); dS = P (dP M - D) over S (chunks as in dK/dV).
#pragma unroll
    for (int chunk = 0; chunk < 4; ++chunk) {
      float sv[8], dpv[8];
#pragma unroll
      for (int ii = 0; ii < 8; ++ii) {
        const int c = lane_col(chunk * 8 + ii, cols);
        sv[ii] = arow[c];
        dpv[ii] = brow[c];
      }
      __syncwarp();
#pragma unroll
      for (int ii = 0; ii < 8; ++ii) {
        const int c = lane_col(chunk * 8 + ii, cols);
        const int s = k0 + c;
        float pv = exp2f(sv[ii] * scale_log2 - lse_t);
        if (s > t || !row_valid) pv = 0.0f;
        const float mult = dropout ? dropout_at(drop, T, t, s, p) : 1.0f;
        ds_row[c] = __float2bfloat16_rn(pv * (dpv[ii] * mult - d_t));
      }
    }
    __syncwarp();

    // dQ += dS K (scaled at the end): K (s, d) row-major.
    {
      const bf16* sdS = reinterpret_cast<const bf16*>(sSw);
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        FragA af;
        wmma::load_matrix_sync(af, sdS + k * 16, kLdP);
#pragma unroll
        for (int n = 0; n < 4; ++n) {
          FragBRow kf;
          wmma::load_matrix_sync(kf, sK + k * 16 * kLdH + n * 16, kLdH);
          wmma::mma_sync(dq[n], af, kf, dq[n]);
        }
      }
    }
  }

  __syncwarp();
#pragma unroll
  for (int n = 0; n < 4; ++n) {
#pragma unroll
    for (int e = 0; e < dq[n].num_elements; ++e) dq[n].x[e] *= scale;
    wmma::store_matrix_sync(sSw + n * 16, dq[n], kLdF, wmma::mem_row_major);
  }
  __syncwarp();
  for (int rr = 0; rr < 16; ++rr) {
    const int tt = q0 + warp * 16 + rr;
    if (tt >= T) break;
    const float2 g = *reinterpret_cast<const float2*>(sSw + rr * kLdF + 2 * lane);
    *reinterpret_cast<__nv_bfloat162*>(dqkv + (static_cast<int64_t>(b) * T + tt) * stride +
                                       h * kHS + 2 * lane) = __floats2bfloat162_rn(g.x, g.y);
  }
}

bool aligned(const void* ptr, uintptr_t bytes) {
  return reinterpret_cast<uintptr_t>(ptr) % bytes == 0;
}

void check_args(const char* op, int B, int T, int C, int NH, float dropout_p) {
  CHECK(B > 0 && T > 0 && C > 0 && NH > 0 && C % NH == 0,
        "{} on the GPU: B {}, T {}, C {}, NH {} (C must be a positive multiple of NH)", op, B, T, C,
        NH);
  CHECK(flash_attention_supported(DType::kBF16, C, NH),
        "{} on the GPU: head size {} (C {} / NH {}); flash attention takes head size {}", op,
        C / NH, C, NH, kHS);
  CHECK(dropout_p >= 0.0f && dropout_p < 1.0f, "{} on the GPU: dropout {} must be in [0, 1)", op,
        dropout_p);
  CHECK((static_cast<int64_t>(T) + kTile - 1) / kTile <= 65535 &&
            static_cast<int64_t>(B) * NH <= 0x7fffffffLL,
        "{} on the GPU: B {}, T {}, NH {} exceed the launch grid", op, B, T, NH);
}

}  // namespace

bool flash_attention_supported(DType dtype, int C, int NH) {
  static_assert(kHS == 64, "kernels/gpu_flash_rule.h states the head size these kernels take");
  return gpu_flash_attention_supported(dtype, C, NH);  // the rule the memory plan applies too
}

void flash_attention_forward(CudaContext& /*ctx*/, TypedPtr out, float* lse, ConstTypedPtr qkv,
                             int B, int T, int C, int NH, float dropout_p, uint64_t seed) {
  check_args("flash_attention_forward", B, T, C, NH, dropout_p);
  CHECK(out.dtype == DType::kBF16 && qkv.dtype == DType::kBF16,
        "flash_attention_forward on the GPU: out ({}) and qkv ({}) must be bfloat16",
        dtype_name(out.dtype), dtype_name(qkv.dtype));
  CHECK(aligned(qkv.data, 16) && aligned(out.data, 4) && aligned(lse, 4),
        "flash_attention_forward on the GPU: qkv must be 16-byte aligned, out 4-byte aligned");
  const int group = attention_batch_group(B, NH);
  const dim3 grid(static_cast<unsigned>(B * NH), static_cast<unsigned>((T + kTile - 1) / kTile));
  NANOGPT_CUDA_CHECK(cudaFuncSetAttribute(flash_forward_kernel,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          kForwardSmem));
  flash_forward_kernel<<<grid, kThreads, kForwardSmem>>>(
      static_cast<bf16*>(out.data), lse, static_cast<const bf16*>(qkv.data), T, NH, dropout_p,
      seed, group);
  NANOGPT_CUDA_CHECK_LAUNCH();
}

void flash_attention_backward(CudaContext& ctx, TypedPtr dqkv, ConstTypedPtr dout,
                              ConstTypedPtr out, const float* lse, ConstTypedPtr qkv, int B,
                              int T, int C, int NH, float dropout_p, uint64_t seed) {
  check_args("flash_attention_backward", B, T, C, NH, dropout_p);
  CHECK(dqkv.dtype == DType::kBF16 && dout.dtype == DType::kBF16 && out.dtype == DType::kBF16 &&
            qkv.dtype == DType::kBF16,
        "flash_attention_backward on the GPU: dqkv ({}), dout ({}), out ({}) and qkv ({}) must be "
        "bfloat16",
        dtype_name(dqkv.dtype), dtype_name(dout.dtype), dtype_name(out.dtype),
        dtype_name(qkv.dtype));
  CHECK(aligned(qkv.data, 16) && aligned(dout.data, 16) && aligned(out.data, 4) &&
            aligned(dqkv.data, 4) && aligned(lse, 4),
        "flash_attention_backward on the GPU: qkv and dout must be 16-byte aligned, out and dqkv "
        "4-byte aligned");
  const int group = attention_batch_group(B, NH);
  const int64_t rows = static_cast<int64_t>(B) * NH * T;
  float* D = static_cast<float*>(ctx.scratch(static_cast<size_t>(rows) * sizeof(float)));

  constexpr int kDeltaWarps = 8;
  const int64_t delta_blocks = (rows + kDeltaWarps - 1) / kDeltaWarps;
  CHECK(delta_blocks <= 0x7fffffffLL, "flash_attention_backward on the GPU: {} rows", rows);
  flash_delta_kernel<<<static_cast<unsigned>(delta_blocks), kDeltaWarps * kWarpSize>>>(
      D, static_cast<const bf16*>(dout.data), static_cast<const bf16*>(out.data), rows, T, NH);
  NANOGPT_CUDA_CHECK_LAUNCH();

  const dim3 grid(static_cast<unsigned>(B * NH), static_cast<unsigned>((T + kTile - 1) / kTile));
  NANOGPT_CUDA_CHECK(cudaFuncSetAttribute(flash_backward_dkdv_kernel,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          kBackwardSmem));
  flash_backward_dkdv_kernel<<<grid, kThreads, kBackwardSmem>>>(
      static_cast<bf16*>(dqkv.data), static_cast<const bf16*>(dout.data), lse, D,
      static_cast<const bf16*>(qkv.data), T, NH, dropout_p, seed, group);
  NANOGPT_CUDA_CHECK_LAUNCH();

  NANOGPT_CUDA_CHECK(cudaFuncSetAttribute(flash_backward_dq_kernel,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          kBackwardSmem));
  flash_backward_dq_kernel<<<grid, kThreads, kBackwardSmem>>>(
      static_cast<bf16*>(dqkv.data), static_cast<const bf16*>(dout.data), lse, D,
      static_cast<const bf16*>(qkv.data), T, NH, dropout_p, seed, group);
  NANOGPT_CUDA_CHECK_LAUNCH();
}

}  // namespace nanogpt::cuda
