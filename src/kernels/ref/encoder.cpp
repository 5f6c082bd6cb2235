// Reference token + position embedding (forward and accumulating backward; without a position
// embedding when wpe is null): the definition the fast kernels are tested against.
#include "kernels/ops.h"

namespace nanogpt::ref {

void encoder_forward(float* out, const int* inp, const float* wte, const float* wpe, int B, int T,
                     int C) {
  for (int b = 0; b < B; ++b) {
    for (int t = 0; t < T; ++t) {
      float* o = out + (static_cast<int64_t>(b) * T + t) * C;           // (C)
      const float* e = wte + static_cast<int64_t>(inp[b * T + t]) * C;  // (C)
      const float* p = wpe ? wpe + static_cast<int64_t>(t) * C : nullptr;  // (C) or none
      for (int c = 0; c < C; ++c) o[c] = e[c] + (p ? p[c] : 0.0f);
    }
  }
}

void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* inp, int B, int T,
                      int C) {
  for (int b = 0; b < B; ++b) {
    for (int t = 0; t < T; ++t) {
      const float* d = dout + (static_cast<int64_t>(b) * T + t) * C;
      float* de = dwte + static_cast<int64_t>(inp[b * T + t]) * C;
      float* dp = dwpe ? dwpe + static_cast<int64_t>(t) * C : nullptr;
      for (int c = 0; c < C; ++c) {
        de[c] += d[c];
        if (dp) dp[c] += d[c];
      }
    }
  }
}

}  // namespace nanogpt::ref
