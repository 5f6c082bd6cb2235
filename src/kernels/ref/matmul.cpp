// Reference fully connected layer out = inp . weight^T + bias and its accumulating backward, with
// double accumulation.
#include "kernels/ops.h"

namespace nanogpt::ref {

void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int64_t N,
                    int C, int OC) {
  for (int64_t n = 0; n < N; ++n) {
    const float* x = inp + n * C;  // (C)
    for (int o = 0; o < OC; ++o) {
      const float* w = weight + static_cast<int64_t>(o) * C;  // (C)
      double s = bias ? bias[o] : 0.0;
      for (int c = 0; c < C; ++c) s += static_cast<double>(x[c]) * w[c];
      out[n * OC + o] = static_cast<float>(s);
    }
  }
}

void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     const float* weight, int64_t N, int C, int OC) {
  if (dinp) {  // dinp (N,C) += dout (N,OC) . weight (OC,C)
    for (int64_t n = 0; n < N; ++n) {
      for (int c = 0; c < C; ++c) {
        double s = 0;
        for (int o = 0; o < OC; ++o) {
          s += static_cast<double>(dout[n * OC + o]) * weight[static_cast<int64_t>(o) * C + c];
        }
        dinp[n * C + c] += static_cast<float>(s);
      }
    }
  }
  if (dweight) {  // dweight (OC,C) += dout^T (OC,N) . inp (N,C)
    for (int o = 0; o < OC; ++o) {
      for (int c = 0; c < C; ++c) {
        double s = 0;
        for (int64_t n = 0; n < N; ++n) s += static_cast<double>(dout[n * OC + o]) * inp[n * C + c];
        dweight[static_cast<int64_t>(o) * C + c] += static_cast<float>(s);
      }
    }
  }
  if (dbias) {  // dbias (OC) += column sums of dout
    for (int o = 0; o < OC; ++o) {
      double s = 0;
      for (int64_t n = 0; n < N; ++n) s += dout[n * OC + o];
      dbias[o] += static_cast<float>(s);
    }
  }
}

}  // namespace nanogpt::ref
