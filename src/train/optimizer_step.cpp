// OptimizerStep (see optimizer_step.h): the unfused pass-per-stage sequence and the fused one.
#include "train/optimizer_step.h"

#include <cmath>

#include "optim/grad_clip.h"

namespace nanogpt {

double OptimizerStep::measure(Backend& backend, GPT& model, const GradScaler& scaler,
                              double max_norm) {
  unscale_ = scaler.inv_scale();
  if (fused_) {
    const double norm = grad_global_norm(backend, model.table(), model.grads().data(), unscale_);
    clip_ = clip_coefficient(norm, max_norm);
    return norm;
  }
  unscale_pass_ = scaler.enabled();
  if (unscale_pass_) scaler.unscale(backend, model.grads());
  const double norm = clip_grad_norm(backend, model.table(), model.grads().data(), max_norm);
  clip_pass_ = max_norm > 0 && std::isfinite(norm) && max_norm / (norm + 1e-6) < 1.0;
  return norm;
}

void OptimizerStep::apply(GPT& model, Optimizer& optimizer, double lr) {
  if (!fused_) {
    optimizer.step(model.params().data(), model.grads().data(), lr);
    model.zero_grad();
    return;
  }
  FusedStepExtras x;
  x.grad_unscale = unscale_;
  x.grad_clip = clip_;
  x.zero_grads = true;
  float* params = model.params().data();           // (marks the 16-bit copy stale ...)
  x.params_lowp = model.params_lowp_for_update();  // (... and fresh again: step_fused writes it)
  optimizer.step_fused(params, model.grads().data(), lr, x);
}

double OptimizerStep::bytes_moved(const GPT& model, int state_tensors) const {
  const double n4 = 4.0 * static_cast<double>(model.table().total_numel());
  const double copy = model.dtype() == DType::kF32 ? 0.0 : n4 / 2;  // the 16-bit copy written
  // The update reads grads, params and state and writes params and state.
  const double update = n4 * (3 + 2.0 * state_tensors);
  if (fused_) return n4 + update + n4 + copy;  // norm read; update; zeroed grads written back
  // [unscale r+w], norm read, [clip r+w], update, zero_grad write. (The 16-bit copy is refreshed
  // by the next forward: its pass is timed there, as elementwise.)
  return n4 * ((unscale_pass_ ? 2 : 0) + 1 + (clip_pass_ ? 2 : 0) + 1) + update;
}

}  // namespace nanogpt
