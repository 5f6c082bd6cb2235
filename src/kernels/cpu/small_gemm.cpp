// Small float32 GEMMs of the fully connected layer (see small_gemm.h). Each product is cut into
// 64-column panels and K chunks of kKc; each (K chunk x panel) of the streamed matrix is first
// copied into a contiguous 32 KB buffer (its rows are 512 B or 1.5 KB apart in the source, which
// puts them in a few L1 sets: unpacked, the tiles ran at ~30% of the FMA rate) that stays in L1
// while the register tiles of tile_gemm-inl.h walk down all rows; the other operand is read by
// broadcasts. One parallel region per call. The forward and input-gradient products give each
// thread a band of rows wherever there are enough (each packs every panel and reads and writes the
// same rows as the row-wise ops before and after it: no line moves between cores), else its
// columns. The weight gradient sums over two fixed halves of the rows (weight_grad), half the
// threads each, each thread its columns of its half. Every output element is the same chains of
// FMAs whatever the split, so results do not depend on the thread count.
// The MLP's GELU rides along in the same region (small_gemm_gelu_*): in the forward as an epilogue
// on each row block while it is in L1; in the backward the recomputed gelu(pre) is written straight
// into the packed panel of the dweight product and the derivative is the epilogue of the dinp
// product, so neither (N, 4C) intermediate goes through memory and the MLP's GELU costs no region.
// Compiled for every CPU target (Highway's foreach_target.h) and dispatched at run time; the
// register tile is the target's (tile_gemm-inl.h; on ARM64 NEON's, also on SVE CPUs:
// fixed_width_targets.h).
#include "kernels/cpu/fixed_width_targets.h"  // first, before any Highway header
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/small_gemm.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "core/check.h"
#include "kernels/cpu_backend.h"
#include "kernels/cpu/attention_dims.h"
#include "kernels/cpu/attention_tiles-inl.h"
#include "kernels/cpu/gelu_math.h"
#include "kernels/cpu/small_gemm.h"
#include "kernels/cpu/tile_gemm-inl.h"

HWY_BEFORE_NAMESPACE();
namespace nanogpt::cpu::HWY_NAMESPACE {

namespace {

constexpr int kKc = 128;       // K chunk: a 128 x 64 float panel is 32 KB (L1 is 48 KB here)
constexpr int kPanel = 64;     // columns per panel: one 4 x 64 register tile wide
constexpr int kRowBlock = 16;  // rows per tile_gemm call (the bias is added while they are in L1)
// Below this many multiply-adds (~10 us on one thread) a product runs on the calling thread.
constexpr int64_t kMinParallelMacs = int64_t{1} << 20;
// With at least this many bands of kRowBlock rows per thread, the forward and input-gradient
// products are split by rows, else by columns. W1 (768 rows, 48 bands; AMD EPYC, two threads):
// in bench_kernels W1/Gemm alone the 512-column products ran ~5% faster by columns (each panel
// packed once for all rows instead of once per thread), but in the step by rows the MLP's outputs
// stay on the core that computes the next row-wise op: by rows 8 of 8 rounds faster, 19.1-20.1 vs
// 19.6-20.4 ms a step (busy minutes). With one to three panels a thread, rows were faster alone
// too (the 128-column projection 82 -> 70 us).
constexpr int64_t kMinBandsPerThread = 4;

// Part t of nt of `count` items, [begin, end) cut at multiples of `unit`.
struct Range {
  int64_t begin, end;
};
Range part_of(int64_t count, int64_t unit, int t, int nt) {
  const int64_t units = (count + unit - 1) / unit;
  const int64_t per = (units + nt - 1) / nt;
  return {std::min(count, t * per * unit), std::min(count, (t + 1) * per * unit)};
}

// This thread's share of `count` items, cut at multiples of `unit`.
Range thread_part(int64_t count, int64_t unit) {
  return part_of(count, unit, omp_get_thread_num(), omp_get_num_threads());
}

// This thread's share of `count` columns, cut at panel boundaries.
Range thread_share(int64_t count) { return thread_part(count, kPanel); }

// out (R, [w0, w1)) (+)= a (R, K) . X (K, [w0, w1)), this thread's columns: a is read as
// a[r*a_rs + k*a_ks]; pack(buf, k, kc, w, pw) writes X's rows k..k+kc, columns w..w+pw into buf
// (kc, pw). The first K chunk overwrites out unless `accumulate`; after the last, while the block
// is in L1, epilogue(o, r, rows, w, pw) finishes the block out (rows, [w, w + pw)) at row r.
template <class PackX, class Epilogue>
void panel_gemm(float* out, int64_t ldo, const float* a, int64_t a_rs, int64_t a_ks, int64_t R,
                int64_t K, Range cols, bool accumulate, PackX&& pack, Epilogue&& epilogue) {
  alignas(64) float buf[kKc * kPanel];
  for (int64_t w = cols.begin; w < cols.end; w += kPanel) {
    const int pw = static_cast<int>(std::min<int64_t>(kPanel, cols.end - w));
    for (int64_t k = 0; k < K; k += kKc) {
      const int kc = static_cast<int>(std::min<int64_t>(kKc, K - k));
      const bool set = !accumulate && k == 0, last = k + kc == K;
      pack(buf, k, kc, w, pw);
      for (int64_t r = 0; r < R; r += kRowBlock) {
        const int rows = static_cast<int>(std::min<int64_t>(kRowBlock, R - r));
        float* o = out + r * ldo + w;
        const float* ak = a + r * a_rs + k * a_ks;
        if (set) {
          TileGemmSet(o, ldo, ak, a_rs, a_ks, buf, pw, rows, kc, pw);
        } else {
          TileGemmAcc(o, ldo, ak, a_rs, a_ks, buf, pw, rows, kc, pw);
        }
        if (last) epilogue(o, r, rows, w, pw);
      }
    }
  }
}

// No epilogue.
constexpr auto kNoEpilogue = [](float*, int64_t, int, int64_t, int) {};

// Adds bias[w..w+pw) to each of the block's rows (o rows ldo apart); bias may be null.
void add_bias(float* o, int64_t ldo, int rows, const float* bias, int64_t w, int pw) {
  if (!bias) return;
  for (int i = 0; i < rows; ++i) {
#pragma omp simd
    for (int j = 0; j < pw; ++j) o[i * ldo + j] += bias[w + j];
  }
}

// This thread's share of an (R, W) output: {rows, columns}, by bands of kRowBlock rows when there
// are at least kMinBandsPerThread bands per thread (or too few panels to go round), else by
// columns.
struct Share {
  Range rows, cols;
};
Share thread_share_2d(int64_t R, int64_t W) {
  const int64_t nt = omp_get_num_threads();
  const int64_t bands = (R + kRowBlock - 1) / kRowBlock, panels = (W + kPanel - 1) / kPanel;
  if (bands < kMinBandsPerThread * nt && panels >= nt) return {{0, R}, thread_share(W)};
  return {thread_part(R, kRowBlock), {0, W}};
}

// The forward's packing: X = weight^T (C, OC), buf[i][j] = weight[w + j][k + i].
auto pack_weight_transposed(const float* weight, int C) {
  return [=](float* buf, int64_t k, int kc, int64_t w, int pw) {
    using attention_tiles::Word32;
    attention_v::Transpose(reinterpret_cast<Word32*>(buf), pw,
                           reinterpret_cast<const Word32*>(weight + w * C + k), C, pw, kc);
  };
}

// buf (kc, pw) = rows k.. of a row-major (.., ld) matrix, columns w..w+pw.
void pack_rows(float* buf, const float* x, int64_t ld, int64_t k, int kc, int64_t w, int pw) {
  for (int i = 0; i < kc; ++i) std::memcpy(buf + i * pw, x + (k + i) * ld + w, pw * sizeof(float));
}

// dbias (OC) += column sums of dout (N,OC), this thread's columns: each column summed in row order
// from zero, then added (matmul.cpp's unparallel order, so the same floats).
void column_sums(float* dbias, const float* dout, int64_t N, int OC, Range cols) {
  if (!dbias || cols.begin >= cols.end) return;
  alignas(64) float acc[kPanel];
  for (int64_t w = cols.begin; w < cols.end; w += kPanel) {
    const int pw = static_cast<int>(std::min<int64_t>(kPanel, cols.end - w));
    std::fill(acc, acc + pw, 0.0f);
    for (int64_t n = 0; n < N; ++n) {
      const float* d = dout + n * OC + w;
#pragma omp simd
      for (int j = 0; j < pw; ++j) acc[j] += d[j];
    }
    for (int j = 0; j < pw; ++j) dbias[w + j] += acc[j];
  }
}

// The weight gradient's sums over the second half of the rows (n floats, not zeroed; none for
// n = 0).
std::unique_ptr<float[], decltype(&std::free)> half_buffer(int64_t n) {
  float* p = n > 0 ? static_cast<float*>(std::aligned_alloc(
                         64, (static_cast<size_t>(n) * sizeof(float) + 63) / 64 * 64))
                   : nullptr;
  CHECK(n == 0 || p != nullptr, "small_gemm: out of memory for {} floats", n);
  return {p, &std::free};
}

// The first row of the weight gradient's second half of the N rows: where the row-split products
// of two threads cut them (a multiple of kRowBlock).
int64_t second_half(int64_t N) { return part_of(N, kRowBlock, 1, 2).begin; }

// Inside the region: dweight (OC, C) += dout^T (OC, N) . X (N, C), X's rows packed by
// pack_x(buf, n, kc, w, pw) (rows n.., columns w..), summed in two halves of the rows: the first
// into dweight, the second from zero into `half` (OC, C), added after a barrier; the same sums,
// so the same bits, on any number of threads. The first half of the threads takes the first half
// of the rows, the others the second, each its columns: each thread then reads the rows of dout
// and X that the row-split products and row-wise ops gave it. Summed over all rows by columns (one
// chain per element), every thread read every row, half of them from the other core's cache:
// W1 fp32 8 of 8 rounds slower, 16.6-20.0 vs 15.3-19.1 ms a step (AMD EPYC, 2 threads).
template <class PackX>
void weight_grad(float* dweight, float* half, const float* dout, int64_t N, int C, int OC,
                 PackX&& pack_x) {
  const int nt = omp_get_num_threads(), tid = omp_get_thread_num();
  const int64_t mid = second_half(N);
  const auto first = [&](Range cols) {
    panel_gemm(dweight, C, dout, 1, OC, OC, mid, cols, true, pack_x, kNoEpilogue);
  };
  const auto second = [&](Range cols) {
    panel_gemm(
        half, C, dout + mid * OC, 1, OC, OC, N - mid, cols, false,
        [&](float* buf, int64_t k, int kc, int64_t w, int pw) { pack_x(buf, mid + k, kc, w, pw); },
        kNoEpilogue);
  };
  if (nt == 1) {
    first({0, C});
    if (mid < N) second({0, C});
  } else {
    const int g0 = nt / 2;
    if (tid < g0) {
      first(part_of(C, kPanel, tid, g0));
    } else if (mid < N) {
      second(part_of(C, kPanel, tid - g0, nt - g0));
    }
  }
  if (mid >= N) return;
#pragma omp barrier
  const Range rows = part_of(OC, 1, tid, nt);
  for (int64_t r = rows.begin; r < rows.end; ++r) {
#pragma omp simd
    for (int c = 0; c < C; ++c) dweight[r * C + c] += half[r * C + c];
  }
}

}  // namespace

void SmallGemmForward(float* out, const float* inp, const float* weight, const float* bias,
                      int64_t N, int C, int OC) {
#pragma omp parallel if (N * C * OC >= kMinParallelMacs)
  {
    const Share share = thread_share_2d(N, OC);
    const int64_t r0 = share.rows.begin;
    if (r0 < share.rows.end) {
      panel_gemm(out + r0 * OC, OC, inp + r0 * C, C, 1, share.rows.end - r0, C, share.cols, false,
                 pack_weight_transposed(weight, C),
                 [&](float* o, int64_t, int rows, int64_t w, int pw) {
                   add_bias(o, OC, rows, bias, w, pw);
                 });
    }
  }
}

void SmallGemmGeluForward(float* out, float* act, const float* inp, const float* weight,
                          const float* bias, int64_t N, int C, int OC, MlpActivation kind) {
#pragma omp parallel if (N * C * OC >= kMinParallelMacs)
  {
    const Share share = thread_share_2d(N, OC);
    const int64_t r0 = share.rows.begin;
    if (r0 < share.rows.end) {
      panel_gemm(out + r0 * OC, OC, inp + r0 * C, C, 1, share.rows.end - r0, C, share.cols, false,
                 pack_weight_transposed(weight, C),
                 [&](float* o, int64_t r, int rows, int64_t w, int pw) {
                   add_bias(o, OC, rows, bias, w, pw);
                   for (int i = 0; i < rows; ++i) {
                     gelu_math::forward_serial(act + (r0 + r + i) * OC + w, o + i * OC, pw, kind);
                   }
                 });
    }
  }
}

void SmallGemmBackward(float* dinp, bool accumulate_dinp, float* dweight, float* dbias,
                       const float* dout, const float* inp, const float* weight, int64_t N, int C,
                       int OC) {
  if (!dinp && !dweight && !dbias) return;
  const auto half = half_buffer(dweight ? int64_t{OC} * C : 0);
  // One region for both products and the bias sums (all independent): dinp by rows (or columns),
  // dweight by halves of the rows (weight_grad), dbias by columns.
#pragma omp parallel if (N * C * OC >= kMinParallelMacs)
  {
    column_sums(dbias, dout, N, OC, thread_share(OC));
    if (dinp) {  // dinp (N,C) (+)= dout (N,OC) . weight (OC,C), by rows or columns
      const Share share = thread_share_2d(N, C);
      const int64_t r0 = share.rows.begin;
      if (r0 < share.rows.end) {
        panel_gemm(
            dinp + r0 * C, C, dout + r0 * OC, OC, 1, share.rows.end - r0, OC, share.cols,
            accumulate_dinp,
            [&](float* buf, int64_t k, int kc, int64_t w, int pw) {
              pack_rows(buf, weight, C, k, kc, w, pw);
            },
            kNoEpilogue);
      }
    }
    if (dweight) {  // dweight (OC,C) += dout^T (OC,N) . inp (N,C)
      weight_grad(dweight, half.get(), dout, N, C, OC,
                  [&](float* buf, int64_t k, int kc, int64_t w, int pw) {
                    pack_rows(buf, inp, C, k, kc, w, pw);
                  });
    }
  }
}

void SmallGemmGeluBackward(float* dpre, float* dweight, float* dbias, const float* dout,
                           const float* pre, const float* weight, int64_t N, int C, int OC,
                           MlpActivation kind) {
  const auto half = half_buffer(dweight ? int64_t{OC} * C : 0);
#pragma omp parallel if (N * C * OC >= kMinParallelMacs)
  {
    column_sums(dbias, dout, N, OC, thread_share(OC));
    // dpre (N,C) = d(gelu) = dout (N,OC) . weight (OC,C), then in the epilogue (each row of the
    // block in place) dpre = d(gelu) * gelu'(pre): gelu_backward_overwrite's element code.
    const Share share = thread_share_2d(N, C);
    const int64_t r0 = share.rows.begin;
    if (r0 < share.rows.end) {
      panel_gemm(
          dpre + r0 * C, C, dout + r0 * OC, OC, 1, share.rows.end - r0, OC, share.cols, false,
          [&](float* buf, int64_t k, int kc, int64_t w, int pw) {
            pack_rows(buf, weight, C, k, kc, w, pw);
          },
          [&](float* o, int64_t r, int rows, int64_t w, int pw) {
            for (int i = 0; i < rows; ++i) {
              gelu_math::backward_serial<false>(o + i * C, pre + (r0 + r + i) * C + w, o + i * C,
                                                pw, kind);
            }
          });
    }
    if (dweight) {  // dweight (OC,C) += dout^T (OC,N) . gelu(pre) (N,C), packed as computed
      weight_grad(dweight, half.get(), dout, N, C, OC,
                  [&](float* buf, int64_t k, int kc, int64_t w, int pw) {
                    for (int i = 0; i < kc; ++i) {
                      gelu_math::forward_serial(buf + i * pw, pre + (k + i) * C + w, pw, kind);
                    }
                  });
    }
  }
}

}  // namespace nanogpt::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nanogpt::cpu {

HWY_EXPORT(SmallGemmForward);
HWY_EXPORT(SmallGemmGeluForward);
HWY_EXPORT(SmallGemmBackward);
HWY_EXPORT(SmallGemmGeluBackward);

bool small_gemm_fits(int64_t N, int C, int OC) {
  return N > 1 && C % 16 == 0 && OC % 16 == 0 && N * C * OC <= kSmallGemmMaxMacs;
}

bool small_gemm_runs(const CpuBackend& ctx, int64_t N, int C, int OC) {
  return ctx.ways().small_products_f32 == SmallProductsWay::kTiles && small_gemm_fits(N, C, OC);
}

void small_gemm_forward(float* out, const float* inp, const float* weight, const float* bias,
                        int64_t N, int C, int OC) {
  HWY_DYNAMIC_DISPATCH(SmallGemmForward)(out, inp, weight, bias, N, C, OC);
}

void small_gemm_gelu_forward(float* out, float* act, const float* inp, const float* weight,
                             const float* bias, int64_t N, int C, int OC, MlpActivation kind) {
  HWY_DYNAMIC_DISPATCH(SmallGemmGeluForward)(out, act, inp, weight, bias, N, C, OC, kind);
}

void small_gemm_backward(float* dinp, bool accumulate_dinp, float* dweight, float* dbias,
                         const float* dout, const float* inp, const float* weight, int64_t N, int C,
                         int OC) {
  HWY_DYNAMIC_DISPATCH(SmallGemmBackward)
  (dinp, accumulate_dinp, dweight, dbias, dout, inp, weight, N, C, OC);
}

void small_gemm_gelu_backward(float* dpre, float* dweight, float* dbias, const float* dout,
                              const float* pre, const float* weight, int64_t N, int C, int OC,
                              MlpActivation kind) {
  HWY_DYNAMIC_DISPATCH(SmallGemmGeluBackward)
  (dpre, dweight, dbias, dout, pre, weight, N, C, OC, kind);
}

}  // namespace nanogpt::cpu
#endif  // HWY_ONCE
