// Fast LayerNorm, float32 and 16-bit outputs / gradients (ops.h, ops_lowp.h), in one file so that
// every form runs the same row code: the forward is parallel over rows, each normalized by
// layernorm_row (two passes over a cached row in Highway vectors, row_reduce-inl.h's sums;
// out-of-line, so the float32 kernel, the fusion with the residual add and the 16-bit forms give
// bit-identical rows and statistics: the backward recomputes LayerNorm outputs and relies on
// that); the 16-bit forward rounds each float row once. The backward computes dinp row by row and
// sums dweight/dbias over blocks of 16 rows column by column (in registers) into per-part partial
// rows, added in part order (deterministic for a fixed thread count); the 16-bit backward widens
// dout a row at a time, so it computes exactly the float32 kernel on the widened dout. Compiled
// for every CPU target (Highway's foreach_target.h) and dispatched at run time.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/layernorm.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/cpu_backend.h"
#include "kernels/cpu/convert-inl.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/row_reduce-inl.h"
#include "kernels/ops.h"
#include "kernels/ops_lowp.h"

HWY_BEFORE_NAMESPACE();
namespace nanogpt::cpu::HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;
using row_reduce::DF, row_reduce::VF, row_reduce::row_sum, row_reduce::row_for_each,
    row_reduce::load_row, row_reduce::store_row;

// o (C) = (x - mean) * rstd * weight + bias (bias nullable); *mean, *rstd of x (C), eps 1e-5.
// RMSNorm: mean 0 (no centering), so rstd is 1 / root mean square.
HWY_NOINLINE void layernorm_row(float* o, float* mean, float* rstd, const float* x,
                                const float* weight, const float* bias, int C, NormKind norm) {
  const DF d;
  float m = 0;
  if (norm == NormKind::kLayerNorm) {
    m = row_sum(
            C, [&](int c) { return hn::LoadU(d, x + c); },
            [&](int c, int k) { return row_reduce::load_part(x + c, k); }) /
        C;
  }
  const VF mv = hn::Set(d, m);
  const float var = row_sum(
      C,
      [&](int c) {
        const VF t = hn::Sub(hn::LoadU(d, x + c), mv);
        return hn::Mul(t, t);
      },
      [&](int c, int k) {  // zero past the row, where x - m would not be
        const VF t = hn::IfThenElseZero(hn::FirstN(d, static_cast<size_t>(k)),
                                        hn::Sub(row_reduce::load_part(x + c, k), mv));
        return hn::Mul(t, t);
      });
  const float s = 1.0f / std::sqrt(var / C + 1e-5f);
  const VF sv = hn::Set(d, s);
  row_for_each(C, [&](int c, int k) {
    const VF t = hn::Mul(hn::Sub(load_row(x, c, k), mv), sv);
    const VF w = load_row(weight, c, k);
    const VF y = bias ? hn::MulAdd(t, w, load_row(bias, c, k)) : hn::Mul(t, w);
    store_row(y, o, c, k);
  });
  *mean = m;
  *rstd = s;
}

// One row of the backward's dinp: di (C) += d inp, from dr (C) = its dout row.
HWY_NOINLINE void layernorm_backward_row(float* di, const float* dr, const float* x,
                                         const float* weight, float m, float s, int C,
                                         NormKind norm) {
  const DF d;
  const VF mv = hn::Set(d, m), sv = hn::Set(d, s);
  // g = d * weight: its sum and its sum against xhat (the lanes past C have d = 0, so g = 0)
  VF gs = hn::Zero(d), gxs = hn::Zero(d);
  row_for_each(C, [&](int c, int k) {
    const VF xhat = hn::Mul(hn::Sub(load_row(x, c, k), mv), sv);
    const VF g = hn::Mul(load_row(dr, c, k), load_row(weight, c, k));
    gs = hn::Add(gs, g);
    gxs = hn::MulAdd(g, xhat, gxs);
  });
  const float g_sum = hn::GetLane(hn::SumOfLanes(d, gs));
  const float gx_sum = hn::GetLane(hn::SumOfLanes(d, gxs));
  const float g_mean = norm == NormKind::kLayerNorm ? g_sum / C : 0.0f, gx_mean = gx_sum / C;
  const VF gmv = hn::Set(d, g_mean), gxv = hn::Set(d, gx_mean);
  row_for_each(C, [&](int c, int k) {
    const VF xhat = hn::Mul(hn::Sub(load_row(x, c, k), mv), sv);
    const VF g = hn::Mul(load_row(dr, c, k), load_row(weight, c, k));
    // di += s * (g - g_mean - xhat * gx_mean)
    const VF t = hn::NegMulAdd(xhat, gxv, hn::Sub(g, gmv));
    store_row(hn::MulAdd(sv, t, load_row(di, c, k)), di, c, k);
  });
}

// The weight and bias gradients of `rows` rows: pw, pb (C) += sum over the rows, in row order, of
// d * xhat and d, where row i has dout drows[i] (C), input x + i * C, mean[i], rstd[i]. Column
// by column with the sums in registers: per row (pw, pb through memory) the stores of one row fed
// the loads of the next and held the backward at half the speed of its arithmetic.
HWY_NOINLINE void layernorm_backward_columns(float* pw, float* pb, const float* const* drows,
                                             const float* x, const float* mean, const float* rstd,
                                             int rows, int C) {
  const DF d;
  row_for_each(C, [&](int c, int k) {
    VF aw = load_row(pw, c, k), ab = load_row(pb, c, k);
    for (int i = 0; i < rows; ++i) {
      const VF dv = load_row(drows[i], c, k);
      const VF xhat =
          hn::Mul(hn::Sub(load_row(x + static_cast<int64_t>(i) * C, c, k), hn::Set(d, mean[i])),
                  hn::Set(d, rstd[i]));
      aw = hn::MulAdd(dv, xhat, aw);
      ab = hn::Add(ab, dv);
    }
    store_row(aw, pw, c, k);
    store_row(ab, pb, c, k);
  });
}

// dinp (N, C, nullable) += d inp; dweight, dbias (C, nullable) += their grads. dout_row(n, buf)
// returns row n of dout as C floats (a pointer into dout, or buf (C) filled with its widened row).
// dweight/dbias are reduced through per-part partial rows summed in part order (deterministic for a
// fixed thread count, whether or not the parts run in parallel).
template <class DoutRow>
void layernorm_backward_rows(float* dinp, float* dweight, float* dbias, DoutRow dout_row,
                             const float* inp, const float* weight, const float* mean,
                             const float* rstd, int64_t N, int C, NormKind norm) {
  // The rows are cut into one static part per available thread (as OpenMP's static schedule cuts
  // them), each part summing its own dweight/dbias partial; the partials are added in part order.
  // The partition depends only on the thread count, not on whether the parts run in parallel
  // (small calls run them on the calling thread: parallel.h).
  const int parts = std::max(1, omp_get_max_threads());
  constexpr int kBlock = 16;  // rows whose dinp is done before their columns are summed (in L1)
  // partial (parts, 2, C): each part's dweight and dbias sums.
  std::vector<float> partial(static_cast<size_t>(parts) * 2 * C, 0.0f);
#pragma omp parallel for schedule(static, 1) \
    num_threads(parts) if (worth_parallel(int64_t{4} * N * C))
  for (int p = 0; p < parts; ++p) {
    const int64_t q = N / parts, r = N % parts;
    const int64_t n0 = p * q + std::min<int64_t>(p, r), n1 = n0 + q + (p < r ? 1 : 0);
    float* pw = partial.data() + static_cast<size_t>(p) * 2 * C;  // (C)
    float* pb = pw + C;                                           // (C)
    std::vector<float> buf(static_cast<size_t>(kBlock) * C);      // widened dout rows (kBlock, C)
    const float* drows[kBlock];
    for (int64_t b = n0; b < n1; b += kBlock) {
      const int rows = static_cast<int>(std::min<int64_t>(kBlock, n1 - b));
      for (int i = 0; i < rows; ++i) {
        const int64_t n = b + i;
        drows[i] = dout_row(n, buf.data() + static_cast<size_t>(i) * C);
        if (dinp) {
          layernorm_backward_row(dinp + n * C, drows[i], inp + n * C, weight, mean[n], rstd[n], C,
                                 norm);
        }
      }
      if (dweight || dbias) {
        layernorm_backward_columns(pw, pb, drows, inp + b * C, mean + b, rstd + b, rows, C);
      }
    }
  }
  for (int p = 0; p < parts; ++p) {
    const float* pw = partial.data() + static_cast<size_t>(p) * 2 * C;
    if (dweight) {
#pragma omp simd
      for (int c = 0; c < C; ++c) dweight[c] += pw[c];
    }
    if (dbias) {
#pragma omp simd
      for (int c = 0; c < C; ++c) dbias[c] += pw[C + c];
    }
  }
}

}  // namespace

void LayernormForward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                      const float* bias, int64_t N, int C, NormKind norm) {
#pragma omp parallel for schedule(static) if (worth_parallel(2 * N * C))
  for (int64_t n = 0; n < N; ++n) {
    layernorm_row(out + n * C, mean + n, rstd + n, inp + n * C, weight, bias, C, norm);
  }
}

// r (C) = a + w * b: a + b exactly at w = 1, else skip_forward's floats (Highway's MulAdd, as
// there: fused where the target has FMA).
HWY_INLINE void weighted_residual_row(float* r, const float* a, const float* b, float w, int C) {
  if (w == 1.0f) {
#pragma omp simd
    for (int c = 0; c < C; ++c) r[c] = a[c] + b[c];
    return;
  }
  const row_reduce::DF d;
  const auto wv = hn::Set(d, w);
  row_reduce::row_for_each(C, [&](int c, int count) {
    if (count == static_cast<int>(hn::Lanes(d))) {
      hn::StoreU(hn::MulAdd(wv, hn::LoadU(d, b + c), hn::LoadU(d, a + c)), d, r + c);
    } else {
      row_reduce::store_part(
          hn::MulAdd(wv, row_reduce::load_part(b + c, count), row_reduce::load_part(a + c, count)),
          r + c, count);
    }
  });
}

// The residual add feeding the next LayerNorm, in one pass: each row of res = a + w * b is summed
// while it is in cache and normalized right away (one parallel region, one read of a and b).
void ResidualLayernormForward(float* res, float* out, float* mean, float* rstd, const float* a,
                              const float* b, const float* weight, const float* bias, int64_t N,
                              int C, NormKind norm, float w) {
#pragma omp parallel for schedule(static) if (worth_parallel(4 * N * C))
  for (int64_t n = 0; n < N; ++n) {
    float* r = res + n * C;
    weighted_residual_row(r, a + n * C, b + n * C, w, C);
    layernorm_row(out + n * C, mean + n, rstd + n, r, weight, bias, C, norm);
  }
}

void LayernormBackward(float* dinp, float* dweight, float* dbias, const float* dout,
                       const float* inp, const float* weight, const float* mean, const float* rstd,
                       int64_t N, int C, NormKind norm) {
  layernorm_backward_rows(
      dinp, dweight, dbias, [dout, C](int64_t n, float*) { return dout + n * C; }, inp, weight,
      mean, rstd, N, C, norm);
}

void LayernormForwardTyped(TypedPtr out, float* mean, float* rstd, const float* inp,
                           const float* weight, const float* bias, int64_t N, int C,
                           NormKind norm) {
  if (float* o = out.f32()) return LayernormForward(o, mean, rstd, inp, weight, bias, N, C, norm);
#pragma omp parallel if (worth_parallel(2 * N * C))
  {
    std::vector<float> row(static_cast<size_t>(C));  // one normalized row before rounding
#pragma omp for schedule(static)
    for (int64_t n = 0; n < N; ++n) {
      layernorm_row(row.data(), mean + n, rstd + n, inp + n * C, weight, bias, C, norm);
      NarrowSpan(out.at(n * C), row.data(), C);
    }
  }
}

void ResidualLayernormForwardTyped(float* res, TypedPtr out, float* mean, float* rstd,
                                   const float* a, const float* b, const float* weight,
                                   const float* bias, int64_t N, int C, NormKind norm, float w) {
  if (float* o = out.f32()) {
    return ResidualLayernormForward(res, o, mean, rstd, a, b, weight, bias, N, C, norm, w);
  }
#pragma omp parallel if (worth_parallel(4 * N * C))
  {
    std::vector<float> row(static_cast<size_t>(C));  // one normalized row before rounding
#pragma omp for schedule(static)
    for (int64_t n = 0; n < N; ++n) {
      float* r = res + n * C;  // (C) float32 residual stream
      weighted_residual_row(r, a + n * C, b + n * C, w, C);
      layernorm_row(row.data(), mean + n, rstd + n, r, weight, bias, C, norm);
      NarrowSpan(out.at(n * C), row.data(), C);
    }
  }
}

void LayernormBackwardTyped(float* dinp, float* dweight, float* dbias, ConstTypedPtr dout,
                            const float* inp, const float* weight, const float* mean,
                            const float* rstd, int64_t N, int C, NormKind norm) {
  if (const float* d = dout.f32()) {
    return LayernormBackward(dinp, dweight, dbias, d, inp, weight, mean, rstd, N, C, norm);
  }
  layernorm_backward_rows(
      dinp, dweight, dbias,
      [dout, C](int64_t n, float* buf) {
        WidenSpan(buf, dout.at(n * C), C);
        return static_cast<const float*>(buf);
      },
      inp, weight, mean, rstd, N, C, norm);
}

}  // namespace nanogpt::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nanogpt::cpu {

HWY_EXPORT(LayernormForward);
HWY_EXPORT(ResidualLayernormForward);
HWY_EXPORT(LayernormBackward);
HWY_EXPORT(LayernormForwardTyped);
HWY_EXPORT(ResidualLayernormForwardTyped);
HWY_EXPORT(LayernormBackwardTyped);

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                       const float* bias, int64_t N, int C, NormKind norm) {
  HWY_DYNAMIC_DISPATCH(LayernormForward)(out, mean, rstd, inp, weight, bias, N, C, norm);
}

void residual_layernorm_forward(float* res, float* out, float* mean, float* rstd, const float* a,
                                const float* b, const float* weight, const float* bias, int64_t N,
                                int C, NormKind norm, float w) {
  HWY_DYNAMIC_DISPATCH(ResidualLayernormForward)
  (res, out, mean, rstd, a, b, weight, bias, N, C, norm, w);
}

void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                        const float* inp, const float* weight, const float* mean, const float* rstd,
                        int64_t N, int C, NormKind norm) {
  HWY_DYNAMIC_DISPATCH(LayernormBackward)
  (dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C, norm);
}

void layernorm_forward(CpuBackend&, TypedPtr out, float* mean, float* rstd, const float* inp,
                       const float* weight, const float* bias, int64_t N, int C, NormKind norm) {
  HWY_DYNAMIC_DISPATCH(LayernormForwardTyped)(out, mean, rstd, inp, weight, bias, N, C, norm);
}

void residual_layernorm_forward(CpuBackend&, float* res, TypedPtr out, float* mean, float* rstd,
                                const float* a, const float* b, const float* weight,
                                const float* bias, int64_t N, int C, NormKind norm, float w) {
  HWY_DYNAMIC_DISPATCH(ResidualLayernormForwardTyped)
  (res, out, mean, rstd, a, b, weight, bias, N, C, norm, w);
}

void layernorm_backward(CpuBackend&, float* dinp, float* dweight, float* dbias,
                        ConstTypedPtr dout, const float* inp, const float* weight,
                        const float* mean, const float* rstd, int64_t N, int C, NormKind norm) {
  HWY_DYNAMIC_DISPATCH(LayernormBackwardTyped)
  (dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C, norm);
}

}  // namespace nanogpt::cpu
#endif  // HWY_ONCE
