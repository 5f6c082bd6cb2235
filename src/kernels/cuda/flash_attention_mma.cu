// Flash attention on mma.sync fragments (ops_cuda.h: flash_attention_forward_mma,
// flash_attention_backward_mma): the op of flash_attention.cu (same semantics, layouts, dropout
// masks, lse and determinism) with the products written as register-level tensor-core code:
// mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 through inline PTX, operands fetched with
// ldmatrix (.trans for the operands stored (k, n) row-major) from swizzled shared-memory tiles
// filled by cp.async (double-buffered), and the softmax applied to the accumulator fragments in
// registers. CudaBackend's flash attention (flash_attention.cu's wmma kernels were the first).
//
// Fragment layouts (PTX ISA, "Matrix Fragments for mma.m16n8k16", bf16), with g = lane / 4 and
// q = lane % 4:
//   A (16 x 16, 4 x b32): a0 (row g, cols 2q, 2q+1), a1 (row g+8, same cols), a2 (row g, cols
//     2q+8, 2q+9), a3 (row g+8, cols 2q+8, 2q+9); the lower half of a b32 holds the lower column.
//   B (16 x 8, 2 x b32): b0 (rows k = 2q, 2q+1, col n = g), b1 (rows 2q+8, 2q+9, col g).
//   C (16 x 8, 4 x f32): c0, c1 (row g, cols 2q, 2q+1), c2, c3 (row g+8, cols 2q, 2q+1).
// So the C-fragments of a 16 x 64 product (8 n-tiles j) ARE the A-fragments of the next product
// over those 64 columns: k-step kk takes a0 = (c0, c1) and a1 = (c2, c3) of n-tile 2kk, a2, a3
// the same of n-tile 2kk + 1 (packed to bf16).
// ldmatrix.x4: lanes 8i .. 8i+7 give the row addresses of 8 x 8 matrix i, which lands in register
// i as (row lane / 4, cols 2 (lane % 4), +1) (with .trans: the transposed matrix's row).
//
// Every warp owns 16 rows of its block's tile (queries in the forward and dQ, keys in dK/dV), so
// the element-wise work between two products needs neither shared memory nor barriers; only the
// tile loads do. A tile row of 64 bf16 is 8 chunks of 16 bytes, chunk c of row r stored at chunk
// c ^ (r % 8): the 8 row addresses of an ldmatrix matrix then hit 8 distinct 16-byte bank groups.
//   forward   one block of 8 warps per (query tile of 128 rows, b*NH + h); key tiles of 64 up to
//             the diagonal; online softmax with the lazy rescale of flash_attention.cu (threshold
//             8 in log2 units), l of the undropped probabilities, O += drop(P) V.
//   backward  D = rowsum(dout * out); one block of 4 warps per (key tile of 64, b*NH + h) for dK,
//             dV (query tiles of 64 from the diagonal on); one block of 4 warps per (query tile of
//             64, b*NH + h) for dQ (key tiles up to the diagonal). P recomputed from lse. Every
//             output element written by one thread of one block: deterministic, no atomics.
// Registers (ptxas, sm_80 .. sm_90, no spills): forward 128 (2 blocks of 8 warps per SM), dK/dV
// and dQ 168 each (3 blocks of 4 warps per SM; dK/dV handles a query tile in two halves of 32
// queries for that). Checked without a GPU by a host emulation of these fragments (lane-exact
// mma / ldmatrix layouts) against ref::attention_*.
#include "kernels/cuda/cuda_util.cuh"
#include "kernels/ops_lowp.h"

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "kernels/cuda/ops_cuda.h"
#include "kernels/gpu_flash_rule.h"
#include "kernels/cuda/reduce.cuh"

namespace nanogpt::cuda {

namespace {

constexpr int kHS = 64;                       // head size (the only one supported)
constexpr int kN = 64;                        // rows of a streamed tile (keys; queries in dK/dV)
constexpr int kFwdWarps = 8;                  // forward: 8 warps x 16 query rows
constexpr int kFwdM = 16 * kFwdWarps;         // query rows of a forward block
constexpr int kFwdThreads = 32 * kFwdWarps;
constexpr int kBwdWarps = 4;                  // backward: 4 warps x 16 rows
constexpr int kBwdM = 16 * kBwdWarps;         // rows of a backward block (== kN)
constexpr int kBwdThreads = 32 * kBwdWarps;
constexpr int kTileElems = kN * kHS;          // bf16 elements of a 64-row tile
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;
constexpr float kRescaleThreshold = 8.0f;     // as flash_attention.cu's forward
static_assert(kBwdM == kN, "the backward's blocks and streamed tiles have the same rows");

// Shared memory (bytes).
constexpr int kFwdSmem = (kFwdM + 4 * kN) * kHS * 2;              // Q; K, V double-buffered
constexpr int kDkdvSmem = 6 * kTileElems * 2 + 4 * kN * 4;        // K, V; Q, dO x2; lse, D x2
constexpr int kDqSmem = 6 * kTileElems * 2;                       // Q, dO; K, V x2

// Element offset of (row, chunk of 8 columns) in a swizzled tile of 64-column rows.
__device__ __forceinline__ int swz(int row, int chunk) {
  return row * kHS + ((chunk ^ (row & 7)) << 3);
}

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes global -> shared, asynchronously; !valid: zeros (nothing read).
__device__ __forceinline__ void cp_async16(bf16* dst, const bf16* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
               "r"(valid ? 16 : 0)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
__device__ __forceinline__ void cp_async_wait_all() {
  asm volatile("cp.async.wait_group 0;\n" ::: "memory");
}

// Rows row0 .. row0 + kRows - 1 of the matrix whose row r (64 bf16, 16-byte aligned) starts at
// base + r * stride, into the swizzled tile s; rows >= n_rows become zeros.
template <int kRows, int kThreads>
__device__ __forceinline__ void load_tile_async(bf16* s, const bf16* base, int64_t stride, int row0,
                                                int n_rows) {
  static_assert((kRows * 8) % kThreads == 0, "whole chunks per thread");
#pragma unroll
  for (int j = 0; j < kRows * 8 / kThreads; ++j) {
    const int idx = static_cast<int>(threadIdx.x) + j * kThreads;
    const int r = idx >> 3, c = idx & 7;
    const bool ok = row0 + r < n_rows;
    const bf16* src = ok ? base + static_cast<int64_t>(row0 + r) * stride + c * 8 : base;
    cp_async16(s + swz(r, c), src, ok);
  }
}

__device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], const bf16* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p))
               : "memory");
}
__device__ __forceinline__ void ldsm_x4_trans(uint32_t (&r)[4], const bf16* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p))
               : "memory");
}

// d += a b (16 x 8 x 16, bf16 operands, float32 accumulators).
__device__ __forceinline__ void mma16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// bf16 pair (lo in the lower half), rounded to nearest even.
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}

__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// The A-fragments (4 k-steps of 16 columns) of rows row0 .. row0+15 of a swizzled 64-column tile.
__device__ __forceinline__ void load_a_frags(uint32_t (&a)[4][4], const bf16* tile, int row0,
                                             int lane) {
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) ldsm_x4(a[kk], tile + swz(row0 + (lane & 15), 2 * kk + (lane >> 4)));
}

// acc (16 x 16kNP, 2kNP n-tiles) = a (16 x 64, A-fragments) times tile rows 16np0 ..
// 16(np0 + kNP) - 1 as columns: acc[r][n] = sum_d a[r][d] tile[16np0 + n][d] (tile (n, d)
// row-major is B = tile^T "col").
template <int kNP>
__device__ __forceinline__ void mma_abt(float (&acc)[2 * kNP][4], const uint32_t (&a)[4][4],
                                        const bf16* tile, int lane, int np0 = 0) {
#pragma unroll
  for (int j = 0; j < 2 * kNP; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[j][e] = 0.0f;
  }
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) {
#pragma unroll
    for (int np = 0; np < kNP; ++np) {
      // matrices: (rows 16np..+7, cols 16kk..+7), (same rows, +8 cols), (rows +8, cols), (+8, +8)
      uint32_t b[4];
      ldsm_x4(b, tile + swz(16 * (np0 + np) + (lane & 7) + ((lane >> 4) << 3),
                            2 * kk + ((lane >> 3) & 1)));
      mma16816(acc[2 * np], a[kk], b[0], b[1]);
      mma16816(acc[2 * np + 1], a[kk], b[2], b[3]);
    }
  }
}

// acc (16 x 64) += p (16 x 16kKS, A-fragments) times tile rows 16kk0 .. 16(kk0 + kKS) - 1 (the
// tile (k, d) row-major).
template <int kKS>
__device__ __forceinline__ void mma_ab(float (&acc)[8][4], const uint32_t (&p)[kKS][4],
                                       const bf16* tile, int lane, int kk0 = 0) {
#pragma unroll
  for (int kk = 0; kk < kKS; ++kk) {
#pragma unroll
    for (int dp = 0; dp < 4; ++dp) {
      // matrices (transposed): (rows 16kk..+7, cols 16dp..+7), (rows +8, cols), (rows, cols +8),
      // (+8, +8)
      uint32_t b[4];
      ldsm_x4_trans(b, tile + swz(16 * (kk0 + kk) + (lane & 7) + (((lane >> 3) & 1) << 3),
                                  2 * dp + (lane >> 4)));
      mma16816(acc[2 * dp], p[kk], b[0], b[1]);
      mma16816(acc[2 * dp + 1], p[kk], b[2], b[3]);
    }
  }
}

// Element (j, e) of a C-fragment into the A-fragments of the next product: k-step j / 2, register
// 2 (j % 2) + e / 2 holds the pair (e % 2 == 0 of it and its neighbour).
template <int kKS>
__device__ __forceinline__ void to_a_frags(uint32_t (&a)[kKS][4], const float (&x)[2 * kKS][4]) {
#pragma unroll
  for (int j = 0; j < 2 * kKS; ++j) {
    a[j >> 1][2 * (j & 1)] = pack_bf16(x[j][0], x[j][1]);
    a[j >> 1][2 * (j & 1) + 1] = pack_bf16(x[j][2], x[j][3]);
  }
}

// The 16 x 64 float32 fragments (row r_local = g (+8), cols 2q (+1) of n-tile j) scaled by `scale`
// as bf16 into the warp's 16 rows (row0 ..) of a swizzled tile, then rows row0 .. row0+15 with
// t0 + r < n_rows copied to dst + (t0 + r) * stride (16-byte stores).
__device__ __forceinline__ void store_rows(bf16* tile, int row0, const float (&x)[8][4],
                                           float scale0, float scale1, bf16* dst, int64_t stride,
                                           int t0, int n_rows, int lane) {
  const int g = lane >> 2, q = lane & 3;
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    *reinterpret_cast<uint32_t*>(tile + swz(row0 + g, j) + 2 * q) =
        pack_bf16(x[j][0] * scale0, x[j][1] * scale0);
    *reinterpret_cast<uint32_t*>(tile + swz(row0 + g + 8, j) + 2 * q) =
        pack_bf16(x[j][2] * scale1, x[j][3] * scale1);
  }
  __syncwarp();
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int idx = lane + 32 * i;
    const int r = idx >> 3, c = idx & 7;
    if (t0 + r < n_rows) {
      *reinterpret_cast<uint4*>(dst + static_cast<int64_t>(t0 + r) * stride + c * 8) =
          *reinterpret_cast<const uint4*>(tile + swz(row0 + r, c));
    }
  }
}

// The dropout stream of head (b, h): multiplier of probability (t, s) is
// dropout_mult(seed, (row0 + t) * T + s, p) = attention_dropout_mult(seed0, group, NH*T*T,
// ((b*NH + h)*T + t)*T + s, p) with the group's seed and base index hoisted.
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

// ---- forward ----

// grid (B*NH, ceil(T/128)): blockIdx.x = b*NH + h, query tile gridDim.y - 1 - blockIdx.y (the
// longest rows first). out (B,T,C) bf16, lse (B,NH,T) float32.
__global__ void __launch_bounds__(kFwdThreads) flash_mma_forward_kernel(
    bf16* out, float* lse, const bf16* qkv, int T, int NH, float p, uint64_t seed, int group) {
  extern __shared__ __align__(128) unsigned char smem[];
  bf16* sQ = reinterpret_cast<bf16*>(smem);
  bf16* sK = sQ + kFwdM * kHS;      // 2 buffers
  bf16* sV = sK + 2 * kTileElems;   // 2 buffers

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane >> 2, q = lane & 3;
  const int bh = blockIdx.x;
  const int b = bh / NH, h = bh % NH;
  const int qt = gridDim.y - 1 - blockIdx.y;
  const int q0 = qt * kFwdM;
  const int C = NH * kHS;
  const int64_t stride = 3LL * C;
  const bf16* qbase = qkv + static_cast<int64_t>(b) * T * stride + h * kHS;
  const bf16* kbase = qbase + C;
  const bf16* vbase = qbase + 2 * C;
  const DropoutStream drop = dropout_stream(seed, group, b, h, NH, T);
  const bool dropout = p > 0.0f;
  const float scale_log2 = kLog2e / 8.0f;  // 1/sqrt(64) in log2 units
  const int q_end = min(q0 + kFwdM, T);
  const int n_kv = (q_end + kN - 1) / kN;

  const int r0 = warp * 16;          // the warp's first row in the tile
  const int t0 = q0 + r0 + g;        // this thread's rows t0, t0 + 8
  const int t1 = t0 + 8;
  const bool active = q0 + r0 < T;   // a warp whose rows are all >= T only joins the barriers
  const uint64_t dbase0 = static_cast<uint64_t>((drop.row0 + t0) * T);
  const uint64_t dbase1 = static_cast<uint64_t>((drop.row0 + t1) * T);

  load_tile_async<kFwdM, kFwdThreads>(sQ, qbase, stride, q0, T);
  load_tile_async<kN, kFwdThreads>(sK, kbase, stride, 0, T);
  load_tile_async<kN, kFwdThreads>(sV, vbase, stride, 0, T);
  cp_async_commit();
  cp_async_wait_all();
  __syncthreads();

  uint32_t qf[4][4];
  if (active) load_a_frags(qf, sQ, r0, lane);

  float o[8][4];
#pragma unroll
  for (int j = 0; j < 8; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) o[j][e] = 0.0f;
  }
  float m0 = -INFINITY, m1 = -INFINITY;  // running max of rows t0, t1 (log2 units, scaled)
  float l0 = 0.0f, l1 = 0.0f;            // this thread's part of the running sums

  for (int kt = 0; kt < n_kv; ++kt) {
    if (kt > 0) {
      cp_async_wait_all();
      __syncthreads();  // tile kt visible; every warp done with tile kt - 1's buffers
    }
    if (kt + 1 < n_kv) {
      const int nb = (kt + 1) & 1;
      load_tile_async<kN, kFwdThreads>(sK + nb * kTileElems, kbase, stride, (kt + 1) * kN, T);
      load_tile_async<kN, kFwdThreads>(sV + nb * kTileElems, vbase, stride, (kt + 1) * kN, T);
      cp_async_commit();
    }
    const int k0 = kt * kN;
    // Warps whose rows all precede the tile (fully masked) skip it.
    if (!active || q0 + r0 + 15 < k0) continue;
    const bf16* tK = sK + (kt & 1) * kTileElems;
    const bf16* tV = sV + (kt & 1) * kTileElems;

    float s[8][4];
    mma_abt<4>(s, qf, tK, lane);

    // Scaled scores in log2 units; causal mask (and s >= T) where the tile reaches them.
    const bool need_mask = k0 + kN - 1 > q0 + r0 || k0 + kN > T;
    float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float x = s[j][e] * scale_log2;
        if (need_mask) {
          const int col = k0 + 8 * j + 2 * q + (e & 1);
          const int row = e < 2 ? t0 : t1;
          if (col > row || col >= T) x = -INFINITY;
        }
        s[j][e] = x;
      }
      mx0 = fmaxf(mx0, fmaxf(s[j][0], s[j][1]));
      mx1 = fmaxf(mx1, fmaxf(s[j][2], s[j][3]));
    }
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
    // Tile 0 holds column 0 <= t of every row: m is finite from then on.
    float alpha0 = 1.0f, alpha1 = 1.0f;
    if (kt == 0) {
      m0 = mx0;
      m1 = mx1;
    } else {
      if (mx0 > m0 + kRescaleThreshold) {
        alpha0 = exp2f(m0 - mx0);
        m0 = mx0;
      }
      if (mx1 > m1 + kRescaleThreshold) {
        alpha1 = exp2f(m1 - mx1);
        m1 = mx1;
      }
      if (alpha0 != 1.0f || alpha1 != 1.0f) {
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          o[j][0] *= alpha0;
          o[j][1] *= alpha0;
          o[j][2] *= alpha1;
          o[j][3] *= alpha1;
        }
      }
    }
    float rs0 = 0.0f, rs1 = 0.0f;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      s[j][0] = fast_exp2(s[j][0] - m0);
      s[j][1] = fast_exp2(s[j][1] - m0);
      s[j][2] = fast_exp2(s[j][2] - m1);
      s[j][3] = fast_exp2(s[j][3] - m1);
      rs0 += s[j][0] + s[j][1];
      rs1 += s[j][2] + s[j][3];
    }
    l0 = l0 * alpha0 + rs0;
    l1 = l1 * alpha1 + rs1;
    if (dropout) {
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const int col = k0 + 8 * j + 2 * q;
        s[j][0] *= dropout_mult(drop.seed, dbase0 + col, p);
        s[j][1] *= dropout_mult(drop.seed, dbase0 + col + 1, p);
        s[j][2] *= dropout_mult(drop.seed, dbase1 + col, p);
        s[j][3] *= dropout_mult(drop.seed, dbase1 + col + 1, p);
      }
    }
    uint32_t pf[4][4];
    to_a_frags<4>(pf, s);
    mma_ab<4>(o, pf, tV, lane);
  }

  if (!active) return;
  l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
  l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
  l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
  l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
  // out = O / l through the warp's own rows of sQ (read only by this warp, into qf).
  store_rows(sQ, r0, o, 1.0f / l0, 1.0f / l1, out + static_cast<int64_t>(b) * T * C + h * kHS, C,
             q0 + r0, T, lane);
  if (q == 0) {
    if (t0 < T) lse[static_cast<int64_t>(bh) * T + t0] = (m0 + log2f(l0)) * kLn2;
    if (t1 < T) lse[static_cast<int64_t>(bh) * T + t1] = (m1 + log2f(l1)) * kLn2;
  }
}

// ---- backward ----

// D[(b*NH + h)*T + t] = sum_c dout[b, t, h*64 + c] * out[b, t, h*64 + c]; one warp per row.
__global__ void flash_mma_delta_kernel(float* D, const bf16* dout, const bf16* out, int64_t rows,
                                       int T, int NH) {
  const int lane = threadIdx.x % 32;
  const int64_t r = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (r >= rows) return;
  const int64_t t = r % T, bh = r / T;
  const int64_t b = bh / NH, h = bh % NH;
  const int64_t off = (b * T + t) * NH * kHS + h * kHS + 2 * lane;
  const float2 d = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(dout + off));
  const float2 o = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(out + off));
  const float sum = warp_sum(d.x * o.x + d.y * o.y);
  if (lane == 0) D[r] = sum;
}

// grid (B*NH, ceil(T/64)): blockIdx.x = b*NH + h, key tile blockIdx.y. Writes dqkv's K and V parts
// of the tile's rows. Warp w: key rows k0 + 16w ..; per query tile S^T = K Q^T, dP^T = V dO^T,
// P^T = exp(scale S^T - lse) (0 where t < s or t >= T), dS^T = P^T (dP^T M - D),
// dV += (P^T M) dO, dK += dS^T Q.
// (3 blocks per SM: 168 registers, no spills, with the query halves' loop not unrolled.)
__global__ void __launch_bounds__(kBwdThreads, 3) flash_mma_dkdv_kernel(
    bf16* dqkv, const bf16* dout, const float* lse, const float* Dvec, const bf16* qkv, int T,
    int NH, float p, uint64_t seed, int group) {
  extern __shared__ __align__(128) unsigned char smem[];
  bf16* sK = reinterpret_cast<bf16*>(smem);
  bf16* sV = sK + kTileElems;
  bf16* sQ = sV + kTileElems;        // 2 buffers
  bf16* sdO = sQ + 2 * kTileElems;   // 2 buffers
  float* sLse = reinterpret_cast<float*>(sdO + 2 * kTileElems);  // 2 x 64, log2 units
  float* sD = sLse + 2 * kN;                                      // 2 x 64

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane >> 2, q = lane & 3;
  const int bh = blockIdx.x;
  const int b = bh / NH, h = bh % NH;
  const int kt = blockIdx.y;
  const int nq = gridDim.y;
  const int k0 = kt * kN;
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

  const int r0 = warp * 16;
  const int s0 = k0 + r0 + g, s1 = s0 + 8;  // this thread's key rows
  const bool active = k0 + r0 < T;

  load_tile_async<kN, kBwdThreads>(sK, kbase, stride, k0, T);
  load_tile_async<kN, kBwdThreads>(sV, vbase, stride, k0, T);
  load_tile_async<kN, kBwdThreads>(sQ, qbase, stride, k0, T);
  load_tile_async<kN, kBwdThreads>(sdO, dobase, C, k0, T);
  cp_async_commit();
  if (threadIdx.x < kN) {
    const int t = k0 + static_cast<int>(threadIdx.x);
    sLse[threadIdx.x] = t < T ? lse_bh[t] * kLog2e : 0.0f;
    sD[threadIdx.x] = t < T ? D_bh[t] : 0.0f;
  }
  cp_async_wait_all();
  __syncthreads();

  uint32_t kf[4][4], vf[4][4];
  if (active) {
    load_a_frags(kf, sK, r0, lane);
    load_a_frags(vf, sV, r0, lane);
  }
  float dk[8][4], dv[8][4];
#pragma unroll
  for (int j = 0; j < 8; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      dk[j][e] = 0.0f;
      dv[j][e] = 0.0f;
    }
  }

  for (int qt = kt; qt < nq; ++qt) {
    const int it = qt - kt;
    if (it > 0) {
      cp_async_wait_all();
      __syncthreads();
    }
    if (qt + 1 < nq) {
      const int nb = (it + 1) & 1;
      const int nq0 = (qt + 1) * kN;
      load_tile_async<kN, kBwdThreads>(sQ + nb * kTileElems, qbase, stride, nq0, T);
      load_tile_async<kN, kBwdThreads>(sdO + nb * kTileElems, dobase, C, nq0, T);
      cp_async_commit();
      if (threadIdx.x < kN) {
        const int t = nq0 + static_cast<int>(threadIdx.x);
        sLse[nb * kN + threadIdx.x] = t < T ? lse_bh[t] * kLog2e : 0.0f;
        sD[nb * kN + threadIdx.x] = t < T ? D_bh[t] : 0.0f;
      }
    }
    if (!active) continue;
    const int cb = it & 1;
    const bf16* tQ = sQ + cb * kTileElems;
    const bf16* tdO = sdO + cb * kTileElems;
    const float* tLse = sLse + cb * kN;
    const float* tD = sD + cb * kN;
    const int q0 = qt * kN;

    // In two halves of 32 queries (hq): S^T, dP^T of a half take 32 registers fewer than the
    // whole; dV and dK sum over the halves' k-steps.
#pragma unroll 1
    for (int hq = 0; hq < 2; ++hq) {
      float st[4][4], dpt[4][4];
      mma_abt<2>(st, kf, tQ, lane, 2 * hq);
      mma_abt<2>(dpt, vf, tdO, lane, 2 * hq);
      // Rows: keys s0, s1; columns: queries t = q0 + 32hq + 8j + 2q + (e & 1).
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int c = 32 * hq + 8 * j + 2 * q;
        const float2 ls = *reinterpret_cast<const float2*>(tLse + c);
        const float2 dd = *reinterpret_cast<const float2*>(tD + c);
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int t = q0 + c + (e & 1);
          const int srow = e < 2 ? s0 : s1;
          const float lt = (e & 1) ? ls.y : ls.x;
          const float dt = (e & 1) ? dd.y : dd.x;
          const bool valid = t >= srow && t < T;
          const float pv = valid ? fast_exp2(st[j][e] * scale_log2 - lt) : 0.0f;
          const float mult =
              dropout ? dropout_mult(drop.seed,
                                     static_cast<uint64_t>((drop.row0 + t) * T + srow), p)
                      : 1.0f;
          st[j][e] = pv * mult;                      // P M
          dpt[j][e] = pv * (dpt[j][e] * mult - dt);  // dS
        }
      }
      uint32_t af[2][4];
      to_a_frags<2>(af, st);
      mma_ab<2>(dv, af, tdO, lane, 2 * hq);
      to_a_frags<2>(af, dpt);
      mma_ab<2>(dk, af, tQ, lane, 2 * hq);
    }
  }

  if (!active) return;
  // dK = scale dS^T Q, dV: through the warp's own rows of sK, sV (read only by this warp).
  bf16* dst = dqkv + static_cast<int64_t>(b) * T * stride + h * kHS;
  store_rows(sK, r0, dk, scale, scale, dst + C, stride, k0 + r0, T, lane);
  store_rows(sV, r0, dv, 1.0f, 1.0f, dst + 2 * C, stride, k0 + r0, T, lane);
}

// grid (B*NH, ceil(T/64)): blockIdx.x = b*NH + h, query tile gridDim.y - 1 - blockIdx.y. Writes
// dqkv's Q part of the tile's rows. Warp w: query rows q0 + 16w ..; per key tile S = Q K^T,
// dP = dO V^T, P = exp(scale S - lse) (0 where s > t), dS = P (dP M - D), dQ += dS K.
// (3 blocks per SM: 168 registers, no spills.)
__global__ void __launch_bounds__(kBwdThreads, 3) flash_mma_dq_kernel(
    bf16* dqkv, const bf16* dout, const float* lse, const float* Dvec, const bf16* qkv, int T,
    int NH, float p, uint64_t seed, int group) {
  extern __shared__ __align__(128) unsigned char smem[];
  bf16* sQ = reinterpret_cast<bf16*>(smem);
  bf16* sdO = sQ + kTileElems;
  bf16* sK = sdO + kTileElems;       // 2 buffers
  bf16* sV = sK + 2 * kTileElems;    // 2 buffers

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane >> 2, q = lane & 3;
  const int bh = blockIdx.x;
  const int b = bh / NH, h = bh % NH;
  const int qt = gridDim.y - 1 - blockIdx.y;
  const int q0 = qt * kN;
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
  const int n_kv = qt + 1;

  const int r0 = warp * 16;
  const int t0 = q0 + r0 + g, t1 = t0 + 8;  // this thread's query rows
  const bool active = q0 + r0 < T;
  const float lse0 = t0 < T ? lse[static_cast<int64_t>(bh) * T + t0] * kLog2e : 0.0f;
  const float lse1 = t1 < T ? lse[static_cast<int64_t>(bh) * T + t1] * kLog2e : 0.0f;
  const float d0 = t0 < T ? Dvec[static_cast<int64_t>(bh) * T + t0] : 0.0f;
  const float d1 = t1 < T ? Dvec[static_cast<int64_t>(bh) * T + t1] : 0.0f;
  const uint64_t dbase0 = static_cast<uint64_t>((drop.row0 + t0) * T);
  const uint64_t dbase1 = static_cast<uint64_t>((drop.row0 + t1) * T);

  load_tile_async<kN, kBwdThreads>(sQ, qbase, stride, q0, T);
  load_tile_async<kN, kBwdThreads>(sdO, dobase, C, q0, T);
  load_tile_async<kN, kBwdThreads>(sK, kbase, stride, 0, T);
  load_tile_async<kN, kBwdThreads>(sV, vbase, stride, 0, T);
  cp_async_commit();
  cp_async_wait_all();
  __syncthreads();

  uint32_t qf[4][4], of[4][4];
  if (active) {
    load_a_frags(qf, sQ, r0, lane);
    load_a_frags(of, sdO, r0, lane);
  }
  float dq[8][4];
#pragma unroll
  for (int j = 0; j < 8; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) dq[j][e] = 0.0f;
  }

  for (int kt = 0; kt < n_kv; ++kt) {
    if (kt > 0) {
      cp_async_wait_all();
      __syncthreads();
    }
    if (kt + 1 < n_kv) {
      const int nb = (kt + 1) & 1;
      load_tile_async<kN, kBwdThreads>(sK + nb * kTileElems, kbase, stride, (kt + 1) * kN, T);
      load_tile_async<kN, kBwdThreads>(sV + nb * kTileElems, vbase, stride, (kt + 1) * kN, T);
      cp_async_commit();
    }
    if (!active) continue;
    const int k0 = kt * kN;
    const bf16* tK = sK + (kt & 1) * kTileElems;
    const bf16* tV = sV + (kt & 1) * kTileElems;

    float s[8][4], dp[8][4];
    mma_abt<4>(s, qf, tK, lane);
    mma_abt<4>(dp, of, tV, lane);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int col = k0 + 8 * j + 2 * q + (e & 1);
        const int t = e < 2 ? t0 : t1;
        const bool valid = col <= t && t < T;
        const float pv = valid ? fast_exp2(s[j][e] * scale_log2 - (e < 2 ? lse0 : lse1)) : 0.0f;
        const float mult =
            dropout ? dropout_mult(drop.seed, (e < 2 ? dbase0 : dbase1) + col, p) : 1.0f;
        s[j][e] = pv * (dp[j][e] * mult - (e < 2 ? d0 : d1));
      }
    }
    uint32_t af[4][4];
    to_a_frags<4>(af, s);
    mma_ab<4>(dq, af, tK, lane);
  }

  if (!active) return;
  store_rows(sQ, r0, dq, scale, scale, dqkv + static_cast<int64_t>(b) * T * stride + h * kHS,
             stride, q0 + r0, T, lane);
}

bool aligned(const void* ptr, uintptr_t bytes) {
  return reinterpret_cast<uintptr_t>(ptr) % bytes == 0;
}

void check_args(const char* op, int B, int T, int C, int NH, float dropout_p) {
  CHECK(B > 0 && T > 0 && C > 0 && NH > 0 && C % NH == 0,
        "{} on the GPU: B {}, T {}, C {}, NH {} (C must be a positive multiple of NH)", op, B, T, C,
        NH);
  CHECK(gpu_flash_attention_supported(DType::kBF16, C, NH),
        "{} on the GPU: head size {} (C {} / NH {}); flash attention takes head size {}", op,
        C / NH, C, NH, kHS);
  CHECK(dropout_p >= 0.0f && dropout_p < 1.0f, "{} on the GPU: dropout {} must be in [0, 1)", op,
        dropout_p);
  CHECK((static_cast<int64_t>(T) + kN - 1) / kN <= 65535 &&
            static_cast<int64_t>(B) * NH <= 0x7fffffffLL,
        "{} on the GPU: B {}, T {}, NH {} exceed the launch grid", op, B, T, NH);
}

}  // namespace

void flash_attention_forward_mma(CudaContext& /*ctx*/, TypedPtr out, float* lse,
                                 ConstTypedPtr qkv, int B, int T, int C, int NH, float dropout_p,
                                 uint64_t seed) {
  check_args("flash_attention_forward_mma", B, T, C, NH, dropout_p);
  CHECK(out.dtype == DType::kBF16 && qkv.dtype == DType::kBF16,
        "flash_attention_forward_mma on the GPU: out ({}) and qkv ({}) must be bfloat16",
        dtype_name(out.dtype), dtype_name(qkv.dtype));
  CHECK(aligned(qkv.data, 16) && aligned(out.data, 16) && aligned(lse, 4),
        "flash_attention_forward_mma on the GPU: qkv and out must be 16-byte aligned");
  const int group = attention_batch_group(B, NH);
  const dim3 grid(static_cast<unsigned>(B * NH), static_cast<unsigned>((T + kFwdM - 1) / kFwdM));
  NANOGPT_CUDA_CHECK(cudaFuncSetAttribute(flash_mma_forward_kernel,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize, kFwdSmem));
  flash_mma_forward_kernel<<<grid, kFwdThreads, kFwdSmem>>>(
      static_cast<bf16*>(out.data), lse, static_cast<const bf16*>(qkv.data), T, NH, dropout_p,
      seed, group);
  NANOGPT_CUDA_CHECK_LAUNCH();
}

void flash_attention_backward_mma(CudaContext& ctx, TypedPtr dqkv, ConstTypedPtr dout,
                                  ConstTypedPtr out, const float* lse, ConstTypedPtr qkv, int B,
                                  int T, int C, int NH, float dropout_p, uint64_t seed) {
  check_args("flash_attention_backward_mma", B, T, C, NH, dropout_p);
  CHECK(dqkv.dtype == DType::kBF16 && dout.dtype == DType::kBF16 && out.dtype == DType::kBF16 &&
            qkv.dtype == DType::kBF16,
        "flash_attention_backward_mma on the GPU: dqkv ({}), dout ({}), out ({}) and qkv ({}) "
        "must be bfloat16",
        dtype_name(dqkv.dtype), dtype_name(dout.dtype), dtype_name(out.dtype),
        dtype_name(qkv.dtype));
  CHECK(aligned(qkv.data, 16) && aligned(dout.data, 16) && aligned(out.data, 4) &&
            aligned(dqkv.data, 16) && aligned(lse, 4),
        "flash_attention_backward_mma on the GPU: qkv, dout and dqkv must be 16-byte aligned, "
        "out 4-byte aligned");
  const int group = attention_batch_group(B, NH);
  const int64_t rows = static_cast<int64_t>(B) * NH * T;
  float* D = static_cast<float*>(ctx.scratch(static_cast<size_t>(rows) * sizeof(float)));

  constexpr int kDeltaWarps = 8;
  const int64_t delta_blocks = (rows + kDeltaWarps - 1) / kDeltaWarps;
  CHECK(delta_blocks <= 0x7fffffffLL, "flash_attention_backward_mma on the GPU: {} rows", rows);
  flash_mma_delta_kernel<<<static_cast<unsigned>(delta_blocks), kDeltaWarps * 32>>>(
      D, static_cast<const bf16*>(dout.data), static_cast<const bf16*>(out.data), rows, T, NH);
  NANOGPT_CUDA_CHECK_LAUNCH();

  const dim3 grid(static_cast<unsigned>(B * NH), static_cast<unsigned>((T + kN - 1) / kN));
  NANOGPT_CUDA_CHECK(cudaFuncSetAttribute(flash_mma_dkdv_kernel,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize, kDkdvSmem));
  flash_mma_dkdv_kernel<<<grid, kBwdThreads, kDkdvSmem>>>(
      static_cast<bf16*>(dqkv.data), static_cast<const bf16*>(dout.data), lse, D,
      static_cast<const bf16*>(qkv.data), T, NH, dropout_p, seed, group);
  NANOGPT_CUDA_CHECK_LAUNCH();

  NANOGPT_CUDA_CHECK(cudaFuncSetAttribute(flash_mma_dq_kernel,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize, kDqSmem));
  flash_mma_dq_kernel<<<grid, kBwdThreads, kDqSmem>>>(
      static_cast<bf16*>(dqkv.data), static_cast<const bf16*>(dout.data), lse, D,
      static_cast<const bf16*>(qkv.data), T, NH, dropout_p, seed, group);
  NANOGPT_CUDA_CHECK_LAUNCH();
}

}  // namespace nanogpt::cuda
