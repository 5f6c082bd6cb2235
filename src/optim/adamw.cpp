// AdamW's fused update: one pass per tensor inside one OpenMP region, each thread updating a
// contiguous slice. step_fused (fused=True) also unscales and clips the gradient on the fly,
// zeroes it and rounds the updated params into the 16-bit weight copy, in the same pass. The
// element update is written once in Highway vectors (masked tails) and compiled for every CPU
// target (foreach_target.h), dispatched per slice; results do not depend on the thread count.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "optim/adamw.cpp"
#include "optim/adamw.h"

#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "kernels/cpu/convert.h"  // narrow: the rounding of cpu::convert, one block at a time
#include "optim/elementwise.h"

#ifndef NANOGPT_OPTIM_ADAMW_TYPES_
#define NANOGPT_OPTIM_ADAMW_TYPES_
namespace nanogpt {

struct AdamWScalars {
  float b1, one_minus_b1, b2, one_minus_b2, bc2_sqrt, eps, keep, step_size;
};

// The fused step's gradient transform: g' = (g * unscale) * clip, and g = 0 afterwards if zero.
struct GradTransform {
  float unscale = 1.0f, clip = 1.0f;
  bool zero = false;
};

}  // namespace nanogpt
#endif

HWY_BEFORE_NAMESPACE();
namespace nanogpt::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// p, g, m, v: (n) slices of one tensor. kFused: the gradient is used as GradTransform says (the
// plain step never writes g). m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
// p = p keep - step m / (sqrt(v) / bc2 + eps), each product-sum one fused multiply-add where the
// target has them.
template <bool kFused>
HWY_INLINE void AdamwUpdate(float* p, float* g, float* m, float* v, int64_t n,
                            const AdamWScalars& k, const GradTransform& x) {
  const hn::ScalableTag<float> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const auto b1 = hn::Set(d, k.b1), omb1 = hn::Set(d, k.one_minus_b1);
  const auto b2 = hn::Set(d, k.b2), omb2 = hn::Set(d, k.one_minus_b2);
  const auto bc2 = hn::Set(d, k.bc2_sqrt), eps = hn::Set(d, k.eps);
  const auto keep = hn::Set(d, k.keep), step = hn::Set(d, k.step_size);
  const auto unscale = hn::Set(d, x.unscale), clip = hn::Set(d, x.clip);
  for (int64_t i = 0; i < n; i += N) {
    const auto mask = hn::FirstN(d, static_cast<size_t>(std::min(N, n - i)));
    auto gi = hn::MaskedLoad(mask, d, g + i);
    if constexpr (kFused) {
      gi = hn::Mul(hn::Mul(gi, unscale), clip);
      if (x.zero) hn::BlendedStore(hn::Zero(d), mask, d, g + i);
    }
    const auto mi = hn::MulAdd(omb1, gi, hn::Mul(hn::MaskedLoad(mask, d, m + i), b1));
    const auto vi = hn::MulAdd(omb2, hn::Mul(gi, gi), hn::Mul(hn::MaskedLoad(mask, d, v + i), b2));
    hn::BlendedStore(mi, mask, d, m + i);
    hn::BlendedStore(vi, mask, d, v + i);
    const auto denom = hn::Add(hn::Div(hn::Sqrt(vi), bc2), eps);
    const auto pi = hn::Mul(hn::MaskedLoad(mask, d, p + i), keep);
    hn::BlendedStore(hn::NegMulAdd(step, hn::Div(mi, denom), pi), mask, d, p + i);
  }
}

void AdamwUpdatePlain(float* p, const float* g, float* m, float* v, int64_t n,
                      const AdamWScalars& k) {
  AdamwUpdate<false>(p, const_cast<float*>(g), m, v, n, k, GradTransform{});  // g only read
}

void AdamwUpdateFused(float* p, float* g, float* m, float* v, int64_t n, const AdamWScalars& k,
                      const GradTransform& x) {
  AdamwUpdate<true>(p, g, m, v, n, k, x);
}

}  // namespace nanogpt::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nanogpt {

HWY_EXPORT(AdamwUpdatePlain);
HWY_EXPORT(AdamwUpdateFused);

namespace {

// Each tensor's scalars: k with its learning rate lr * factor (the step size lr * factor / (1 -
// b1^t)) and its weight-decay factor keep = 1 - lr * factor * wd (1 for tensors without decay).
// A factor of 1 gives the scalars of lr exactly.
std::vector<AdamWScalars> per_tensor(const std::vector<ParamSpec>& specs,
                                     const std::vector<double>& factors, const AdamWScalars& k,
                                     double lr, double bias_correction1, double weight_decay) {
  std::vector<AdamWScalars> out(specs.size(), k);
  for (size_t i = 0; i < specs.size(); ++i) {
    const double rate = factors[i] == 1.0 ? lr : lr * factors[i];
    out[i].step_size = static_cast<float>(rate / bias_correction1);
    out[i].keep = specs[i].decay ? static_cast<float>(1.0 - rate * weight_decay) : 1.0f;
  }
  return out;
}

// In parallel, for every tensor i of `specs`: body(k[i], offset, n) on this thread's slice of it.
template <class Body>
void for_each_thread_slice(const std::vector<ParamSpec>& specs, const std::vector<AdamWScalars>& k,
                           Body body) {
#pragma omp parallel
  {
    const int64_t nt = omp_get_num_threads(), tid = omp_get_thread_num();
    for (size_t i = 0; i < specs.size(); ++i) {
      const ParamSpec& s = specs[i];
      const AdamWScalars& local = k[i];
      // The same slices in step() and step_fused(), whatever the thread count does to their edges.
      const auto [begin, end] = optim_loops::thread_slice(s.numel, nt, tid);
      body(local, s.offset + begin, end - begin);
    }
  }
}

}  // namespace

AdamW::AdamW(const ParamTable& table, double beta1, double beta2, double weight_decay, double eps,
             MemoryTracker* tracker, bool skip_hidden_matrices)
    : table_(table),
      beta1_(beta1),
      beta2_(beta2),
      weight_decay_(weight_decay),
      eps_(eps),
      m_(static_cast<size_t>(table.total_numel()), tracker),
      v_(static_cast<size_t>(table.total_numel()), tracker) {
  for (const auto& s : table.specs()) {
    if (!(skip_hidden_matrices && s.hidden_matrix)) stepped_.push_back(s);
  }
  lr_factors_.assign(stepped_.size(), 1.0);
}

void AdamW::set_lr_factors(const OptimConfig& config) {
  for (size_t i = 0; i < stepped_.size(); ++i)
    lr_factors_[i] = config.lr_factor_of(stepped_[i].name);
}

std::vector<AdamWScalars> AdamW::scalars_per_tensor(double lr) {
  const AdamWScalars k = scalars(lr);
  const double bias_correction1 = 1.0 - std::pow(beta1_, static_cast<double>(steps_));
  return per_tensor(stepped_, lr_factors_, k, lr, bias_correction1, weight_decay_);
}

AdamWScalars AdamW::scalars(double lr) {
  const int64_t t = ++steps_;
  AdamWScalars k{};
  k.b1 = static_cast<float>(beta1_);
  k.one_minus_b1 = static_cast<float>(1.0 - beta1_);
  k.b2 = static_cast<float>(beta2_);
  k.one_minus_b2 = static_cast<float>(1.0 - beta2_);
  k.bc2_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(beta2_, static_cast<double>(t))));
  k.eps = static_cast<float>(eps_);
  k.step_size = static_cast<float>(lr / (1.0 - std::pow(beta1_, static_cast<double>(t))));
  k.keep = 1.0f;
  return k;
}

void AdamW::step(float* params, const float* grads, double lr) {
  float* m_all = m_.data();
  float* v_all = v_.data();
  for_each_thread_slice(stepped_, scalars_per_tensor(lr),
                        [&](const AdamWScalars& k, int64_t off, int64_t n) {
                          HWY_DYNAMIC_DISPATCH(AdamwUpdatePlain)
                          (params + off, grads + off, m_all + off, v_all + off, n, k);
                        });
}

void AdamW::step_fused(float* params, float* grads, double lr, const FusedStepExtras& extras) {
  const GradTransform x{extras.grad_unscale, extras.grad_clip, extras.zero_grads};
  const TypedPtr lowp = extras.params_lowp;
  float* m_all = m_.data();
  float* v_all = v_.data();
  // The same slices as step(), walked in blocks so that each block of updated params is still in
  // L1 when it is rounded into the 16-bit copy.
  for_each_thread_slice(stepped_, scalars_per_tensor(lr),
                        [&](const AdamWScalars& k, int64_t off0, int64_t n0) {
                          for (int64_t b = 0; b < n0; b += cpu::kConvertBlock) {
                            const int64_t off = off0 + b, n = std::min(cpu::kConvertBlock, n0 - b);
                            HWY_DYNAMIC_DISPATCH(AdamwUpdateFused)
                            (params + off, grads + off, m_all + off, v_all + off, n, k, x);
                            if (lowp) cpu::narrow(lowp.at(off), params + off, n);
                          }
                        });
}

std::vector<OptimizerStateTensor> AdamW::state_tensors() {
  return {{"m", m_.data(), static_cast<int64_t>(m_.size())},
          {"v", v_.data(), static_cast<int64_t>(v_.size())}};
}

}  // namespace nanogpt
#endif  // HWY_ONCE
