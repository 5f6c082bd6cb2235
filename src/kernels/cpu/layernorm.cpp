// Fast LayerNorm, float32 and 16-bit outputs / gradients (ops.h, ops_lowp.h), in one file so that
// every form runs the same row code: the forward is parallel over rows, each normalized by
// layernorm_row (two passes over a cached row; out-of-line, so the float32 kernel, the fusion with
// the residual add and the 16-bit forms give bit-identical rows and statistics: the backward
// recomputes LayerNorm outputs and relies on that); the 16-bit forward rounds each float row once.
// The backward computes dinp per row and reduces dweight/dbias through per-part partial rows
// summed in part order (deterministic for a fixed thread count); the 16-bit backward widens one
// dout row at a time, so it computes exactly the float32 kernel on the widened dout. Compiled for
// every CPU target (Highway's foreach_target.h; the row loops vectorized by the compiler for each)
// and dispatched at run time.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/layernorm.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/context.h"
#include "kernels/cpu/convert.h"
#include "kernels/cpu/parallel.h"
#include "kernels/ops.h"
#include "kernels/ops_lowp.h"

HWY_BEFORE_NAMESPACE();
namespace nanogpt::cpu::HWY_NAMESPACE {
namespace {

// o (C) = (x - mean) * rstd * weight + bias (bias nullable); *mean, *rstd of x (C), eps 1e-5.
// RMSNorm: mean 0 (no centering), so rstd is 1 / root mean square.
HWY_NOINLINE void layernorm_row(float* o, float* mean, float* rstd, const float* x,
                                const float* weight, const float* bias, int C, NormKind norm) {
  float sum = 0;
  if (norm == NormKind::kLayerNorm) {
#pragma omp simd reduction(+ : sum)
    for (int c = 0; c < C; ++c) sum += x[c];
  }
  const float m = sum / C;
  float var = 0;
#pragma omp simd reduction(+ : var)
  for (int c = 0; c < C; ++c) var += (x[c] - m) * (x[c] - m);
  const float s = 1.0f / std::sqrt(var / C + 1e-5f);
  if (bias) {
#pragma omp simd
    for (int c = 0; c < C; ++c) o[c] = (x[c] - m) * s * weight[c] + bias[c];
  } else {
#pragma omp simd
    for (int c = 0; c < C; ++c) o[c] = (x[c] - m) * s * weight[c];
  }
  *mean = m;
  *rstd = s;
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
  // partial (parts, 2, C): each part's dweight and dbias sums.
  std::vector<float> partial(static_cast<size_t>(parts) * 2 * C, 0.0f);
#pragma omp parallel for schedule(static, 1) \
    num_threads(parts) if (worth_parallel(int64_t{4} * N * C))
  for (int p = 0; p < parts; ++p) {
    const int64_t q = N / parts, r = N % parts;
    const int64_t n0 = p * q + std::min<int64_t>(p, r), n1 = n0 + q + (p < r ? 1 : 0);
    float* pw = partial.data() + static_cast<size_t>(p) * 2 * C;  // (C)
    float* pb = pw + C;                                           // (C)
    std::vector<float> buf(static_cast<size_t>(C));               // a widened dout row
    for (int64_t n = n0; n < n1; ++n) {
      const float* x = inp + n * C;              // (C)
      const float* d = dout_row(n, buf.data());  // (C)
      const float m = mean[n], s = rstd[n];
      float g_sum = 0, gx_sum = 0;
#pragma omp simd reduction(+ : g_sum, gx_sum)
      for (int c = 0; c < C; ++c) {
        const float xhat = (x[c] - m) * s;
        const float g = d[c] * weight[c];
        g_sum += g;
        gx_sum += g * xhat;
        pw[c] += d[c] * xhat;
        pb[c] += d[c];
      }
      const float g_mean = norm == NormKind::kLayerNorm ? g_sum / C : 0.0f, gx_mean = gx_sum / C;
      if (dinp) {
        float* di = dinp + n * C;
#pragma omp simd
        for (int c = 0; c < C; ++c) {
          const float xhat = (x[c] - m) * s;
          di[c] += s * (d[c] * weight[c] - g_mean - xhat * gx_mean);
        }
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

// The residual add feeding the next LayerNorm, in one pass: each row of res = a + b is summed
// while it is in cache and normalized right away (one parallel region, one read of a and b).
void ResidualLayernormForward(float* res, float* out, float* mean, float* rstd, const float* a,
                              const float* b, const float* weight, const float* bias, int64_t N,
                              int C, NormKind norm) {
#pragma omp parallel for schedule(static) if (worth_parallel(4 * N * C))
  for (int64_t n = 0; n < N; ++n) {
    float* r = res + n * C;
#pragma omp simd
    for (int c = 0; c < C; ++c) r[c] = a[n * C + c] + b[n * C + c];
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
                           const float* weight, const float* bias, int64_t N, int C, NormKind norm) {
  if (float* o = out.f32()) return LayernormForward(o, mean, rstd, inp, weight, bias, N, C, norm);
#pragma omp parallel if (worth_parallel(2 * N * C))
  {
    std::vector<float> row(static_cast<size_t>(C));  // one normalized row before rounding
#pragma omp for schedule(static)
    for (int64_t n = 0; n < N; ++n) {
      layernorm_row(row.data(), mean + n, rstd + n, inp + n * C, weight, bias, C, norm);
      narrow(out.at(n * C), row.data(), C);
    }
  }
}

void ResidualLayernormForwardTyped(float* res, TypedPtr out, float* mean, float* rstd,
                                   const float* a, const float* b, const float* weight,
                                   const float* bias, int64_t N, int C, NormKind norm) {
  if (float* o = out.f32()) {
    return ResidualLayernormForward(res, o, mean, rstd, a, b, weight, bias, N, C, norm);
  }
#pragma omp parallel if (worth_parallel(4 * N * C))
  {
    std::vector<float> row(static_cast<size_t>(C));  // one normalized row before rounding
#pragma omp for schedule(static)
    for (int64_t n = 0; n < N; ++n) {
      float* r = res + n * C;  // (C) float32 residual stream
#pragma omp simd
      for (int c = 0; c < C; ++c) r[c] = a[n * C + c] + b[n * C + c];
      layernorm_row(row.data(), mean + n, rstd + n, r, weight, bias, C, norm);
      narrow(out.at(n * C), row.data(), C);
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
        widen(buf, dout.at(n * C), C);
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
                                int C, NormKind norm) {
  HWY_DYNAMIC_DISPATCH(ResidualLayernormForward)(res, out, mean, rstd, a, b, weight, bias, N, C, norm);
}

void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                        const float* inp, const float* weight, const float* mean, const float* rstd,
                        int64_t N, int C, NormKind norm) {
  HWY_DYNAMIC_DISPATCH(LayernormBackward)
  (dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C, norm);
}

void layernorm_forward(KernelContext&, TypedPtr out, float* mean, float* rstd, const float* inp,
                       const float* weight, const float* bias, int64_t N, int C, NormKind norm) {
  HWY_DYNAMIC_DISPATCH(LayernormForwardTyped)(out, mean, rstd, inp, weight, bias, N, C, norm);
}

void residual_layernorm_forward(KernelContext&, float* res, TypedPtr out, float* mean, float* rstd,
                                const float* a, const float* b, const float* weight,
                                const float* bias, int64_t N, int C, NormKind norm) {
  HWY_DYNAMIC_DISPATCH(ResidualLayernormForwardTyped)
  (res, out, mean, rstd, a, b, weight, bias, N, C, norm);
}

void layernorm_backward(KernelContext&, float* dinp, float* dweight, float* dbias,
                        ConstTypedPtr dout, const float* inp, const float* weight,
                        const float* mean, const float* rstd, int64_t N, int C, NormKind norm) {
  HWY_DYNAMIC_DISPATCH(LayernormBackwardTyped)
  (dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C, norm);
}

}  // namespace nanogpt::cpu
#endif  // HWY_ONCE
