// TileGemm, per CPU target: the small in-cache matrix product of the dispatched attention kernel,
//   out[r][w] (+)= sum_k a[r*a_rs + k*a_ks] * x[k*ldx + w]   (r < R, k < K, w < W),
// with W a multiple of 16. A is read by (broadcast) strides, so A or A^T work alike. Written once
// in Highway vectors of kTileLanes floats; the register tile (kTileRows rows x kTileCols16 groups
// of 16 columns) is the one place that differs by target: AVX-512's 32 registers hold 4 x 64
// accumulators, AVX2's 16 hold 6 x 16 (12 ymm), 128-bit targets 4 x 16 (NEON's 32) or 2 x 16.
// Included inside a kernel's per-target code (Highway's per-target include guard): the float32
// flash attention, small_gemm and the naive attention.
#if defined(NANOGPT_KERNELS_CPU_TILE_GEMM_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NANOGPT_KERNELS_CPU_TILE_GEMM_INL_H_
#undef NANOGPT_KERNELS_CPU_TILE_GEMM_INL_H_
#else
#define NANOGPT_KERNELS_CPU_TILE_GEMM_INL_H_
#endif

#include <hwy/highway.h>

#include <cstdint>

HWY_BEFORE_NAMESPACE();
namespace nanogpt::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The register tiles are arrays of vectors, which SVE's sizeless vectors cannot be: a file using
// this code leaves the SVE targets out (fixed_width_targets.h), NEON running on SVE CPUs.
#if HWY_TARGET == HWY_SVE || HWY_TARGET == HWY_SVE2 || HWY_TARGET == HWY_SVE_256 || \
    HWY_TARGET == HWY_SVE2_128
#error "tile_gemm-inl.h needs fixed-width vectors: include kernels/cpu/fixed_width_targets.h first"
#endif

// Floats per vector of the tile code: the target's width, at most 16 (a 16-column group is a whole
// number of vectors).
#if HWY_TARGET == HWY_SCALAR
constexpr int kTileLanes = 1;
#else
constexpr int kTileLanes = HWY_MIN(16, static_cast<int>(HWY_LANES(float)));
#endif
using TileTag = hn::FixedTag<float, kTileLanes>;
constexpr int kVecsPer16 = 16 / kTileLanes;

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
constexpr int kTileRows = 4, kTileCols16 = 4;  // 16 zmm accumulators of 32
#elif HWY_TARGET == HWY_AVX2
constexpr int kTileRows = 6, kTileCols16 = 1;  // 12 ymm accumulators of 16
#elif HWY_ARCH_ARM_A64
constexpr int kTileRows = 4, kTileCols16 = 1;  // 16 q accumulators of 32
#else
constexpr int kTileRows = 2, kTileCols16 = 1;  // 8 xmm accumulators of 16
#endif

// One register tile: Rt rows x NV16 groups of 16 columns.
template <bool kAcc, int Rt, int NV16>
HWY_INLINE void TileMicro(float* HWY_RESTRICT out, int64_t ldo, const float* HWY_RESTRICT a,
                          int64_t a_rs, int64_t a_ks, const float* HWY_RESTRICT x, int64_t ldx,
                          int K) {
  const TileTag d;
  constexpr int kV = NV16 * kVecsPer16;  // vectors per row
  using V = hn::Vec<TileTag>;
  if (K < 1) {
    for (int r = 0; r < Rt && !kAcc; ++r) {
      for (int v = 0; v < kV; ++v) hn::StoreU(hn::Zero(d), d, out + r * ldo + kTileLanes * v);
    }
    return;
  }
  V acc[Rt][kV];
  for (int r = 0; r < Rt; ++r) {
    for (int v = 0; v < kV; ++v) {
      acc[r][v] = kAcc ? hn::LoadU(d, out + r * ldo + kTileLanes * v) : hn::Zero(d);
    }
  }
  int k = 0;
  // K >= 1: with a plain for loop (which may run no times) GCC kept the accumulators in memory at
  // both ends of the loop (48 extra 64-byte accesses a call); the do-while keeps them in registers.
  do {
    V xv[kV];
    for (int v = 0; v < kV; ++v) {
      xv[v] = hn::LoadU(d, x + k * ldx + kTileLanes * v);
      // Loaded once into a register and reused by every row: without the empty asm GCC folds the
      // load into each row's FMA (4x the loads: load-bound at ~45% of the FMA peak, not ~90%).
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
      asm("" : "+v"(xv[v].raw));
#elif HWY_TARGET == HWY_AVX2
      asm("" : "+x"(xv[v].raw));
#endif
    }
    for (int r = 0; r < Rt; ++r) {
      const V av = hn::Set(d, a[r * a_rs + k * a_ks]);
      for (int v = 0; v < kV; ++v) acc[r][v] = hn::MulAdd(av, xv[v], acc[r][v]);
    }
  } while (++k < K);
  for (int r = 0; r < Rt; ++r) {
    for (int v = 0; v < kV; ++v) hn::StoreU(acc[r][v], d, out + r * ldo + kTileLanes * v);
  }
}

// The columns of a row band of Rt rows: kTileCols16 groups of 16 at a time, then the rest.
template <bool kAcc, int Rt, int NV16 = kTileCols16>
HWY_INLINE void TileRowBand(float* out, int64_t ldo, const float* a, int64_t a_rs, int64_t a_ks,
                            const float* x, int64_t ldx, int K, int W) {
  int w = 0;
  for (; w + 16 * NV16 <= W; w += 16 * NV16) {
    TileMicro<kAcc, Rt, NV16>(out + w, ldo, a, a_rs, a_ks, x + w, ldx, K);
  }
  if constexpr (NV16 > 1) {
    if (w < W) TileRowBand<kAcc, Rt, NV16 - 1>(out + w, ldo, a, a_rs, a_ks, x + w, ldx, K, W - w);
  }
}

// The rows left after the full bands (fewer than kTileRows): the band of exactly `left` rows.
template <bool kAcc, int Rt = kTileRows - 1>
HWY_INLINE void TileLastRows(int left, float* out, int64_t ldo, const float* a, int64_t a_rs,
                             int64_t a_ks, const float* x, int64_t ldx, int K, int W) {
  if constexpr (Rt >= 1) {
    if (left == Rt) {
      TileRowBand<kAcc, Rt>(out, ldo, a, a_rs, a_ks, x, ldx, K, W);
    } else {
      TileLastRows<kAcc, Rt - 1>(left, out, ldo, a, a_rs, a_ks, x, ldx, K, W);
    }
  }
}

// out (R, W) (+)= A (R, K) X (K, W); W a multiple of 16.
template <bool kAcc>
HWY_INLINE void TileGemm(float* out, int64_t ldo, const float* a, int64_t a_rs, int64_t a_ks,
                         const float* x, int64_t ldx, int R, int K, int W) {
  int r = 0;
  for (; r + kTileRows <= R; r += kTileRows) {
    TileRowBand<kAcc, kTileRows>(out + r * ldo, ldo, a + r * a_rs, a_rs, a_ks, x, ldx, K, W);
  }
  if (r < R) TileLastRows<kAcc>(R - r, out + r * ldo, ldo, a + r * a_rs, a_rs, a_ks, x, ldx, K, W);
}

inline void TileGemmAcc(float* out, int64_t ldo, const float* a, int64_t a_rs, int64_t a_ks,
                        const float* x, int64_t ldx, int R, int K, int W) {
  TileGemm<true>(out, ldo, a, a_rs, a_ks, x, ldx, R, K, W);
}
inline void TileGemmSet(float* out, int64_t ldo, const float* a, int64_t a_rs, int64_t a_ks,
                        const float* x, int64_t ldx, int R, int K, int W) {
  TileGemm<false>(out, ldo, a, a_rs, a_ks, x, ldx, R, K, W);
}

}  // namespace nanogpt::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
