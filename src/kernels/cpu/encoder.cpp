// Fast token + position embedding: forward parallel over rows; backward parallel over channel
// slices so the scatter-add into dwte never races and stays deterministic. Compiled for every CPU
// target and dispatched at run time (Highway; the row adds are elementwise-inl.h's spans).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/encoder.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <omp.h>

#include <algorithm>

#include "kernels/cpu/elementwise-inl.h"
#include "kernels/cpu/parallel.h"
#include "kernels/ops.h"

HWY_BEFORE_NAMESPACE();
namespace nanogpt::cpu::HWY_NAMESPACE {

void EncoderForward(float* out, const int* inp, const float* wte, const float* wpe, int B, int T,
                    int C) {
#pragma omp parallel for schedule(static) if (worth_parallel(int64_t{3} * B * T * C))
  for (int64_t bt = 0; bt < static_cast<int64_t>(B) * T; ++bt) {
    if (!wpe) {  // no position embedding (rotary positions): the token row alone
      std::copy_n(wte + static_cast<int64_t>(inp[bt]) * C, C, out + bt * C);
      continue;
    }
    add_span(out + bt * C,                             // (C)
             wte + static_cast<int64_t>(inp[bt]) * C,  // (C) token row
             wpe + (bt % T) * C, C);                   // (C) position row
  }
}

void EncoderBackward(float* dwte, float* dwpe, const float* dout, const int* inp, int B, int T,
                     int C) {
#pragma omp parallel if (worth_parallel(int64_t{4} * B * T * C))
  {
    // Channel slice [c0, c1) of this thread, a multiple of 16 floats wide.
    const int nt = omp_get_num_threads(), tid = omp_get_thread_num();
    const int per = ((C + nt - 1) / nt + 15) / 16 * 16;
    const int c0 = std::min(C, tid * per), c1 = std::min(C, c0 + per);
    for (int b = 0; b < B; ++b) {
      for (int t = 0; t < T; ++t) {
        const int64_t bt = static_cast<int64_t>(b) * T + t;
        float* de = dwte + static_cast<int64_t>(inp[bt]) * C + c0;  // (c1 - c0)
        const float* g = dout + bt * C + c0;
        if (dwpe) {
          accumulate_twice_span(de, dwpe + static_cast<int64_t>(t) * C + c0, g, c1 - c0);
        } else {
#pragma omp simd
          for (int c = 0; c < c1 - c0; ++c) de[c] += g[c];
        }
      }
    }
  }
}

}  // namespace nanogpt::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nanogpt::cpu {

HWY_EXPORT(EncoderForward);
HWY_EXPORT(EncoderBackward);

void encoder_forward(float* out, const int* inp, const float* wte, const float* wpe, int B, int T,
                     int C) {
  HWY_DYNAMIC_DISPATCH(EncoderForward)(out, inp, wte, wpe, B, T, C);
}

void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* inp, int B, int T,
                      int C) {
  HWY_DYNAMIC_DISPATCH(EncoderBackward)(dwte, dwpe, dout, inp, B, T, C);
}

}  // namespace nanogpt::cpu
#endif  // HWY_ONCE
