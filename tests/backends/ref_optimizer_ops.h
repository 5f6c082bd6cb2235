// RefOptimizerOps: the scalar reference of the optimizer ops (kernels/optimizer_ops.h), plain
// loops in double rounded to float where the op stores a float, under the Backend's method names,
// so that the op table's optimizer rows run on it as on every backend (RefOps derives from it).
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/optimizer_ops.h"
#include "kernels/ops_lowp.h"  // ref::convert

namespace nanogpt::testing {

class RefOptimizerOps {
 public:
  void adamw_step(const AdamWArenas& a, ItemList<AdamWTensorStep> tensors,
                  const AdamWConstants& k, const GradTransform* fused, TypedPtr params_lowp) {
    for (const AdamWTensorStep& t : tensors) {
      for (int64_t i = t.span.offset; i < t.span.offset + t.span.numel; ++i) {
        double g = a.grads[i];
        if (fused) {
          g = static_cast<float>(static_cast<float>(g * fused->unscale) * fused->clip);
          if (fused->zero) a.grads[i] = 0.0f;
        }
        const double m = double(k.b1) * a.m[i] + double(k.one_minus_b1) * g;
        const double v = double(k.b2) * a.v[i] + double(k.one_minus_b2) * g * g;
        a.m[i] = static_cast<float>(m);
        a.v[i] = static_cast<float>(v);
        const double p = double(a.params[i]) * t.keep -
                         double(t.step_size) * m / (std::sqrt(v) / k.bc2_sqrt + k.eps);
        a.params[i] = static_cast<float>(p);
        if (fused && params_lowp) {
          const float pf = a.params[i];
          ref::convert(params_lowp.at(i), ConstTypedPtr(&pf), 1);
        }
      }
    }
  }
  void sgd_step(float* params, const float* grads, float* momentum,
                ItemList<SgdTensorStep> tensors, float lr, float mu) {
    for (const SgdTensorStep& t : tensors) {
      for (int64_t i = t.span.offset; i < t.span.offset + t.span.numel; ++i) {
        double d = double(grads[i]) + double(t.weight_decay) * params[i];
        if (momentum) {
          momentum[i] = static_cast<float>(double(mu) * momentum[i] + d);
          d = momentum[i];
        }
        params[i] = static_cast<float>(params[i] - double(lr) * d);
      }
    }
  }
  double sum_of_squares(const float* grads, ItemList<TensorSpan> tensors, float unscale) {
    double sum = 0;
    for (const TensorSpan& t : tensors) {
      for (int64_t i = t.offset; i < t.offset + t.numel; ++i) {
        const double v = static_cast<float>(grads[i] * unscale);
        sum += v * v;
      }
    }
    return sum;
  }
  void scale_tensors(float* grads, ItemList<TensorSpan> tensors, float s) {
    for (const TensorSpan& t : tensors) {
      for (int64_t i = t.offset; i < t.offset + t.numel; ++i) grads[i] *= s;
    }
  }
  bool scale_and_check_finite(float* grads, int64_t n, float inv) {
    bool finite = true;
    for (int64_t i = 0; i < n; ++i) {
      grads[i] *= inv;
      finite = finite && std::isfinite(grads[i]);
    }
    return finite;
  }
  void lerp_toward(float* avg, const float* x, int64_t n, float decay) {
    for (int64_t i = 0; i < n; ++i) {
      avg[i] = static_cast<float>(double(decay) * avg[i] + (1.0 - decay) * x[i]);
    }
  }
  void muon_momentum(float* buf, float* d, const float* g, int64_t n, float mu, bool nesterov) {
    for (int64_t j = 0; j < n; ++j) {
      buf[j] = static_cast<float>(double(mu) * buf[j] + g[j]);
      d[j] = nesterov ? static_cast<float>(g[j] + double(mu) * buf[j]) : buf[j];
    }
  }
  void muon_update(float* p, const float* o, int64_t n, float keep, float step) {
    for (int64_t j = 0; j < n; ++j) p[j] = static_cast<float>(double(p[j]) * keep - double(step) * o[j]);
  }
  double frobenius_sum_sq(const float* m, int64_t n) {
    double s = 0;
    for (int64_t i = 0; i < n; ++i) s += double(m[i]) * m[i];
    return s;
  }
  void normalize_frobenius(float* x, const float* m, int64_t n, double eps) {
    const float s = static_cast<float>(1.0 / (std::sqrt(frobenius_sum_sq(m, n)) + eps));
    for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(double(m[i]) * s);
  }
  void scale_add(float* x, const float* y, int64_t n, float a) {
    for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(double(a) * x[i] + y[i]);
  }
  void combine(float* out, const float* u, const float* v, int64_t n, float a, float b) {
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(double(a) * u[i] + double(b) * v[i]);
  }
};

}  // namespace nanogpt::testing
