// tile_gemm_acc / tile_gemm_set: the small in-cache matrix product of the attention kernels,
//   out[r][w] (+)= sum_k a[r*a_rs + k*a_ks] * x[k*ldx + w]   (r < R, k < K, w < W),
// with W a multiple of 16. A is read by (broadcast) strides, so A or A^T work alike; register
// tiles of 4 rows x 64 columns (16-float vectors via GCC vector extensions: zmm on AVX-512).
// Each X row vector is loaded once per k into a register and reused by the 4 rows: without the
// empty asm below, GCC folds the load into every FMA (4x the loads), and the kernel becomes
// load-bound at ~45% of the FMA peak instead of ~90%. for_each_register_tile is the tiling both
// this GEMM and the bf16 one of attention_bf16.cpp use.
#pragma once

#include <cstdint>
#include <cstring>

namespace nanogpt::cpu {

using Vec16 = float __attribute__((vector_size(64)));

inline Vec16 load16(const float* p) {
  Vec16 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
inline void store16(float* p, Vec16 v) { std::memcpy(p, &v, sizeof(v)); }

// K < 1 is handled up front and the k loop is a do-while: with a plain for loop (which may run no
// times) GCC kept the accumulators in memory at both ends of the loop, zeroing 16 vectors on the
// stack before it and copying them through the stack after it (48 extra 64-byte accesses a call).
template <bool kAcc, int R, int NV>
inline void tile_gemm_micro(float* out, int64_t ldo, const float* a, int64_t a_rs, int64_t a_ks,
                            const float* x, int64_t ldx, int K) {
  if (K < 1) {
    for (int r = 0; r < R && !kAcc; ++r) {
      for (int v = 0; v < NV; ++v) store16(out + r * ldo + 16 * v, Vec16{});
    }
    return;
  }
  Vec16 acc[R][NV];
  for (int r = 0; r < R; ++r) {
    for (int v = 0; v < NV; ++v) acc[r][v] = kAcc ? load16(out + r * ldo + 16 * v) : Vec16{};
  }
  int k = 0;
  do {
    Vec16 xv[NV];
    for (int v = 0; v < NV; ++v) {
      xv[v] = load16(x + k * ldx + 16 * v);
#ifdef __AVX512F__
      asm("" : "+v"(xv[v]));  // pin to a zmm register (see the header comment)
#endif
    }
    for (int r = 0; r < R; ++r) {
      const float av = a[r * a_rs + k * a_ks];
      for (int v = 0; v < NV; ++v) acc[r][v] += av * xv[v];
    }
  } while (++k < K);
  for (int r = 0; r < R; ++r) {
    for (int v = 0; v < NV; ++v) store16(out + r * ldo + 16 * v, acc[r][v]);
  }
}

// Covers an (R, W) output by register tiles: rows 4 at a time (then the 1-3 left), columns 64 at a
// time (then 48, 32 or 16; W is a multiple of 16), calling micro.template operator()<Rt, NV>(r, w)
// for the tile of Rt rows and NV 16-wide vectors at (r, w). Shared by the float32 tiles here and
// the bf16 ones of attention_bf16.cpp.
template <class Micro>
inline void for_each_register_tile(int R, int W, Micro&& micro) {
  auto widths = [&]<int Rt>(int r) {
    int w = 0;
    for (; w + 64 <= W; w += 64) micro.template operator()<Rt, 4>(r, w);
    switch ((W - w) / 16) {
      case 3: micro.template operator()<Rt, 3>(r, w); break;
      case 2: micro.template operator()<Rt, 2>(r, w); break;
      case 1: micro.template operator()<Rt, 1>(r, w); break;
      default: break;
    }
  };
  int r = 0;
  for (; r + 4 <= R; r += 4) widths.template operator()<4>(r);
  switch (R - r) {
    case 3: widths.template operator()<3>(r); break;
    case 2: widths.template operator()<2>(r); break;
    case 1: widths.template operator()<1>(r); break;
    default: break;
  }
}

template <bool kAcc>
inline void tile_gemm(float* out, int64_t ldo, const float* a, int64_t a_rs, int64_t a_ks,
                      const float* x, int64_t ldx, int R, int K, int W) {
  for_each_register_tile(R, W, [&]<int Rt, int NV>(int r, int w) {
    tile_gemm_micro<kAcc, Rt, NV>(out + r * ldo + w, ldo, a + r * a_rs, a_rs, a_ks, x + w, ldx, K);
  });
}

inline void tile_gemm_acc(float* out, int64_t ldo, const float* a, int64_t a_rs, int64_t a_ks,
                          const float* x, int64_t ldx, int R, int K, int W) {
  tile_gemm<true>(out, ldo, a, a_rs, a_ks, x, ldx, R, K, W);
}

// Overwriting variant (out = A X).
inline void tile_gemm_set(float* out, int64_t ldo, const float* a, int64_t a_rs, int64_t a_ks,
                          const float* x, int64_t ldx, int R, int K, int W) {
  tile_gemm<false>(out, ldo, a, a_rs, a_ks, x, ldx, R, K, W);
}

}  // namespace nanogpt::cpu
