// Fast token + position embedding: forward parallel over rows; backward parallel over channel
// slices so the scatter-add into dwte never races and stays deterministic.
#include <omp.h>

#include <algorithm>

#include "kernels/ops.h"
#include "kernels/cpu/parallel.h"

namespace nanogpt::cpu {

void encoder_forward(float* out, const int* inp, const float* wte, const float* wpe, int B, int T,
                     int C) {
#pragma omp parallel for schedule(static) if (worth_parallel(int64_t{3} * B * T * C))
  for (int64_t bt = 0; bt < static_cast<int64_t>(B) * T; ++bt) {
    float* o = out + bt * C;                                   // (C)
    const float* e = wte + static_cast<int64_t>(inp[bt]) * C;  // (C)
    const float* p = wpe + (bt % T) * C;                       // (C)
#pragma omp simd
    for (int c = 0; c < C; ++c) o[c] = e[c] + p[c];
  }
}

void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* inp, int B, int T,
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
        const float* d = dout + bt * C;
        float* de = dwte + static_cast<int64_t>(inp[bt]) * C;
        float* dp = dwpe + static_cast<int64_t>(t) * C;
#pragma omp simd
        for (int c = c0; c < c1; ++c) {
          de[c] += d[c];
          dp[c] += d[c];
        }
      }
    }
  }
}

}  // namespace nanogpt::cpu
