// Reference LayerNorm over the last dimension (eps 1e-5, biased variance) and RMSNorm (no centering,
// root mean square), forward and accumulating backward, with double accumulation.
#include <cmath>

#include "kernels/ops.h"

namespace nanogpt::ref {

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                       const float* bias, int64_t N, int C, NormKind norm) {
  for (int64_t n = 0; n < N; ++n) {
    const float* x = inp + n * C;  // (C)
    double m = 0;
    if (norm == NormKind::kLayerNorm) {
      for (int c = 0; c < C; ++c) m += x[c];
      m /= C;
    }
    double v = 0;
    for (int c = 0; c < C; ++c) v += (x[c] - m) * (x[c] - m);
    v /= C;
    const double s = 1.0 / std::sqrt(v + 1e-5);
    float* o = out + n * C;
    for (int c = 0; c < C; ++c) {
      o[c] = static_cast<float>((x[c] - m) * s * weight[c] + (bias ? bias[c] : 0.0f));
    }
    mean[n] = static_cast<float>(m);
    rstd[n] = static_cast<float>(s);
  }
}

// With xhat = (x - mean) * rstd and g = dout * weight:
//   dinp += rstd * (g - mean(g) - xhat * mean(g * xhat)), dweight += dout * xhat, dbias += dout;
// RMSNorm (mean 0): the same without the mean(g) term.
void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                        const float* inp, const float* weight, const float* mean, const float* rstd,
                        int64_t N, int C, NormKind norm) {
  for (int64_t n = 0; n < N; ++n) {
    const float* x = inp + n * C;   // (C)
    const float* d = dout + n * C;  // (C)
    const double m = mean[n], s = rstd[n];
    double g_mean = 0, gx_mean = 0;
    for (int c = 0; c < C; ++c) {
      const double xhat = (x[c] - m) * s;
      const double g = static_cast<double>(d[c]) * weight[c];
      g_mean += g;
      gx_mean += g * xhat;
    }
    g_mean = norm == NormKind::kLayerNorm ? g_mean / C : 0.0;
    gx_mean /= C;
    for (int c = 0; c < C; ++c) {
      const double xhat = (x[c] - m) * s;
      const double g = static_cast<double>(d[c]) * weight[c];
      if (dinp) dinp[n * C + c] += static_cast<float>(s * (g - g_mean - xhat * gx_mean));
      if (dweight) dweight[c] += static_cast<float>(d[c] * xhat);
      if (dbias) dbias[c] += d[c];
    }
  }
}

}  // namespace nanogpt::ref
