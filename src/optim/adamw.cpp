// AdamW: each step's constants and per-tensor factors, computed on the host in double and rounded
// to float once, then one pass over the table through the backend's adamw_step (on the CPU one
// OpenMP region, each thread's slice of every tensor through the dispatched update of
// kernels/cpu/adamw_update.h; results do not depend on the thread count). step_fused (fused=True)
// also unscales and clips the gradient on the fly, zeroes it and rounds the updated params into
// the 16-bit weight copy, in the same pass.
#include "optim/adamw.h"

#include <cmath>

#include "kernels/backend.h"

namespace nanogpt {

AdamW::AdamW(const ParamTable& table, double beta1, double beta2, double weight_decay, double eps,
             MemoryTracker* tracker, bool skip_hidden_matrices, Backend* backend)
    : Optimizer(backend),
      table_(table),
      beta1_(beta1),
      beta2_(beta2),
      weight_decay_(weight_decay),
      eps_(eps),
      m_(static_cast<size_t>(table.total_numel()), tracker, &this->backend()),
      v_(static_cast<size_t>(table.total_numel()), tracker, &this->backend()) {
  for (const auto& s : table.specs()) {
    if (!(skip_hidden_matrices && s.hidden_matrix)) stepped_.push_back(s);
  }
  lr_factors_.assign(stepped_.size(), 1.0);
  tensors_.resize(stepped_.size());
}

void AdamW::set_lr_factors(const OptimConfig& config) {
  for (size_t i = 0; i < stepped_.size(); ++i)
    lr_factors_[i] = config.lr_factor_of(stepped_[i].name);
}

AdamWConstants AdamW::begin_step(double lr) {
  const int64_t t = ++steps_;
  AdamWConstants k;
  k.b1 = static_cast<float>(beta1_);
  k.one_minus_b1 = static_cast<float>(1.0 - beta1_);
  k.b2 = static_cast<float>(beta2_);
  k.one_minus_b2 = static_cast<float>(1.0 - beta2_);
  k.bc2_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(beta2_, static_cast<double>(t))));
  k.eps = static_cast<float>(eps_);
  // Each tensor's step size lr_i / (1 - b1^t) and decay factor keep = 1 - lr_i * wd (1 for
  // tensors without decay), lr_i = lr * factor_i (a factor of 1 gives lr's values exactly).
  const double bias_correction1 = 1.0 - std::pow(beta1_, static_cast<double>(t));
  for (size_t i = 0; i < stepped_.size(); ++i) {
    const ParamSpec& s = stepped_[i];
    const double rate = lr_factors_[i] == 1.0 ? lr : lr * lr_factors_[i];
    tensors_[i].span = {s.offset, s.numel};
    tensors_[i].step_size = static_cast<float>(rate / bias_correction1);
    tensors_[i].keep = s.decay ? static_cast<float>(1.0 - rate * weight_decay_) : 1.0f;
  }
  return k;
}

void AdamW::step(float* params, const float* grads, double lr) {
  const AdamWConstants k = begin_step(lr);
  // The plain step only reads the gradients.
  const AdamWArenas a{params, const_cast<float*>(grads), m_.data(), v_.data()};
  backend().adamw_step(a, tensors_, k, nullptr, TypedPtr());
}

void AdamW::step_fused(float* params, float* grads, double lr, const FusedStepExtras& extras) {
  const AdamWConstants k = begin_step(lr);
  const GradTransform x{extras.grad_unscale, extras.grad_clip, extras.zero_grads};
  backend().adamw_step({params, grads, m_.data(), v_.data()}, tensors_, k, &x,
                       extras.params_lowp);
}

std::vector<OptimizerStateTensor> AdamW::state_tensors() {
  return {{"m", m_.data(), static_cast<int64_t>(m_.size())},
          {"v", v_.data(), static_cast<int64_t>(v_.size())}};
}

}  // namespace nanogpt
