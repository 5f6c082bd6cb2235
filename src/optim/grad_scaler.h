// GradScaler: dynamic loss scaling for float16 training, with PyTorch's torch.cuda.amp.GradScaler
// semantics. The loss (through the model's grad_scale) is multiplied by scale() so that small
// activation gradients stay above float16's underflow (2^-24); before clipping, unscale() divides
// the gradients by it and reports whether any is inf/nan. update() then adapts the scale: an
// overflow halves it and the caller skips that optimizer step; growth_interval finite steps in a
// row double it. Its state (scale, growth tracker, skipped steps) is saved in checkpoints.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>

namespace nanogpt {

class Backend;  // kernels/backend.h

struct GradScalerConfig {
  double init_scale = 65536.0;  // 2^16, PyTorch's default
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
};

struct GradScalerState {
  double scale = 65536.0;
  int64_t growth_tracker = 0;  // finite steps since the last change of scale
  int64_t skipped_steps = 0;   // optimizer steps skipped for inf/nan gradients, over the run
};

class GradScaler {
 public:
  // A disabled scaler (float32, bfloat16) has scale 1 and never skips.
  explicit GradScaler(bool enabled = false, GradScalerConfig config = {});

  bool enabled() const { return enabled_; }
  // The factor the loss is multiplied by (1 when disabled).
  float scale() const { return enabled_ ? static_cast<float>(state_.scale) : 1.0f; }
  // The factor unscale() multiplies by: 1/scale in float (1 when disabled).
  float inv_scale() const { return enabled_ ? static_cast<float>(1.0 / state_.scale) : 1.0f; }
  const GradScalerState& state() const { return state_; }

  // grads *= 1 / scale (in place, float32, one parallel pass); returns true when every gradient is
  // finite afterwards (PyTorch's found_inf == 0). Disabled: no scaling, only the check.
  // Computed by `backend`, which holds grads.
  bool unscale(Backend& backend, std::span<float> grads) const;
  // After unscale: found_inf -> scale *= backoff_factor, growth tracker 0, one more skipped step
  // (the caller must not step the optimizer); else growth tracker + 1 and, when it reaches
  // growth_interval, scale *= growth_factor and tracker 0. No-op when disabled.
  void update(bool found_inf);

  // {"scale", "growth_tracker", "skipped_steps"} for state.json.
  nlohmann::json to_json() const;
  void set_state(const GradScalerState& s) { state_ = s; }

 private:
  bool enabled_;
  GradScalerConfig config_;
  GradScalerState state_;
};

// Reads GradScaler::to_json's object; throws nanogpt::Error naming `origin` and the key when
// something is missing, of the wrong type or out of range.
GradScalerState grad_scaler_state_from_json(const nlohmann::json& j, const std::string& origin);

}  // namespace nanogpt
