// The GEMV of decoding (row_reduce-inl.h's dot per output) and the bias gradient's column sums
// (matmul_loops.h), compiled for every CPU target (Highway's foreach_target.h; the column sums
// vectorized by the compiler for each, the 16-bit rows widened by convert-inl.h) and dispatched at
// run time.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/matmul_loops.cpp"
#include "kernels/cpu/matmul_loops.h"

#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <omp.h>

#include <algorithm>
#include <vector>

#include "kernels/cpu/convert-inl.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/row_reduce-inl.h"

HWY_BEFORE_NAMESPACE();
namespace nanogpt::cpu::HWY_NAMESPACE {

void GemvForward(float* out, const float* x, const float* w, const float* b, int C, int OC) {
#pragma omp parallel for schedule(static)
  for (int o = 0; o < OC; ++o) {
    const float* wo = w + static_cast<int64_t>(o) * C;
    out[o] = row_reduce::dot(wo, x, C) + (b ? b[o] : 0.0f);
  }
}

void ColumnSumsAdd(float* dbias, ConstTypedPtr dout, int64_t N, int OC) {
#pragma omp parallel if (worth_parallel(N * OC))
  {
    const int nt = omp_get_num_threads(), tid = omp_get_thread_num();
    const int per = (OC + nt - 1) / nt;
    const int o0 = tid * per, o1 = std::min(OC, o0 + per);
    if (o0 < o1) {
      const float* d32 = dout.f32();
      std::vector<float> acc(o1 - o0, 0.0f), row(d32 ? 0 : o1 - o0);
      for (int64_t n = 0; n < N; ++n) {
        const float* d = d32 ? d32 + n * OC + o0 : row.data();
        if (!d32) WidenSpan(row.data(), dout.at(n * OC + o0), o1 - o0);
#pragma omp simd
        for (int o = 0; o < o1 - o0; ++o) acc[o] += d[o];
      }
      for (int o = o0; o < o1; ++o) dbias[o] += acc[o - o0];
    }
  }
}

}  // namespace nanogpt::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nanogpt::cpu {

HWY_EXPORT(GemvForward);
HWY_EXPORT(ColumnSumsAdd);

void gemv_forward(float* out, const float* x, const float* w, const float* b, int C, int OC) {
  HWY_DYNAMIC_DISPATCH(GemvForward)(out, x, w, b, C, OC);
}

void column_sums_add(float* dbias, ConstTypedPtr dout, int64_t N, int OC) {
  HWY_DYNAMIC_DISPATCH(ColumnSumsAdd)(dbias, dout, N, OC);
}

}  // namespace nanogpt::cpu
#endif  // HWY_ONCE
