// Reference element-wise ops: the MLP activation (GELU tanh and exact, ReLU²), residual add, the
// U-net skip, dropout (counter-based mask), each forward and accumulating backward.
#include <cmath>
#include <numbers>

#include "core/rng.h"
#include "kernels/ops.h"

namespace nanogpt::ref {

namespace {

double gelu(double x, MlpActivation kind) {
  if (kind == MlpActivation::kRelu2) return x > 0 ? x * x : 0.0;
  if (kind == MlpActivation::kExact) return 0.5 * x * (1.0 + std::erf(x / std::numbers::sqrt2));
  const double s = std::sqrt(2.0 / std::numbers::pi);
  return 0.5 * x * (1.0 + std::tanh(s * (x + 0.044715 * x * x * x)));
}

double gelu_grad(double x, MlpActivation kind) {
  if (kind == MlpActivation::kRelu2) return x > 0 ? 2.0 * x : 0.0;
  if (kind == MlpActivation::kExact) {
    return 0.5 * (1.0 + std::erf(x / std::numbers::sqrt2)) +
           x * std::exp(-0.5 * x * x) / std::sqrt(2.0 * std::numbers::pi);
  }
  const double s = std::sqrt(2.0 / std::numbers::pi);
  const double th = std::tanh(s * (x + 0.044715 * x * x * x));
  return 0.5 * (1.0 + th) + 0.5 * x * (1.0 - th * th) * s * (1.0 + 3.0 * 0.044715 * x * x);
}

}  // namespace

void gelu_forward(float* out, const float* inp, int64_t N, MlpActivation kind) {
  for (int64_t i = 0; i < N; ++i) out[i] = static_cast<float>(gelu(inp[i], kind));
}

void gelu_backward(float* dinp, const float* inp, const float* dout, int64_t N, MlpActivation kind) {
  for (int64_t i = 0; i < N; ++i) dinp[i] += static_cast<float>(dout[i] * gelu_grad(inp[i], kind));
}

void residual_forward(float* out, const float* a, const float* b, int64_t N) {
  for (int64_t i = 0; i < N; ++i) out[i] = a[i] + b[i];
}

void residual_backward(float* da, float* db, const float* dout, int64_t N) {
  for (int64_t i = 0; i < N; ++i) {
    da[i] += dout[i];
    db[i] += dout[i];
  }
}

void skip_forward(float* out, const float* x, const float* skip, float w, int64_t N) {
  for (int64_t i = 0; i < N; ++i) out[i] = static_cast<float>(x[i] + double(w) * skip[i]);
}

double skip_backward(float* dskip, const float* dout, const float* skip, float w, int64_t N) {
  double dw = 0;
  for (int64_t i = 0; i < N; ++i) {
    dw += double(dout[i]) * skip[i];
    dskip[i] = static_cast<float>(double(w) * dout[i]);
  }
  return dw;
}

void dropout_forward(float* out, const float* inp, int64_t N, float p, uint64_t seed) {
  const float scale = p > 0 ? 1.0f / (1.0f - p) : 1.0f;
  for (int64_t i = 0; i < N; ++i) {
    const bool keep = p == 0 || hash_uniform(seed, static_cast<uint64_t>(i)) >= p;
    out[i] = keep ? inp[i] * scale : 0.0f;
  }
}

void dropout_backward(float* dinp, const float* dout, int64_t N, float p, uint64_t seed) {
  const float scale = p > 0 ? 1.0f / (1.0f - p) : 1.0f;
  for (int64_t i = 0; i < N; ++i) {
    const bool keep = p == 0 || hash_uniform(seed, static_cast<uint64_t>(i)) >= p;
    if (keep) dinp[i] += dout[i] * scale;
  }
}

}  // namespace nanogpt::ref
