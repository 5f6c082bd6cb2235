// GradScaler (see grad_scaler.h): unscale-and-check in one pass of the backend, PyTorch's update rule, and its
// checkpointed state.
#include "optim/grad_scaler.h"

#include <cmath>

#include "core/check.h"
#include "core/json_util.h"
#include "kernels/backend.h"

namespace nanogpt {

GradScaler::GradScaler(bool enabled, GradScalerConfig config) : enabled_(enabled), config_(config) {
  state_.scale = config.init_scale;
}

bool GradScaler::unscale(Backend& backend, std::span<float> grads) const {
  // The reciprocal in float as PyTorch does (exact for the power-of-two scales used here).
  return backend.scale_and_check_finite(grads.data(), static_cast<int64_t>(grads.size()),
                                        inv_scale());
}

void GradScaler::update(bool found_inf) {
  if (!enabled_) return;
  if (found_inf) {
    state_.scale *= config_.backoff_factor;
    state_.growth_tracker = 0;
    ++state_.skipped_steps;
    return;
  }
  if (++state_.growth_tracker == config_.growth_interval) {
    state_.scale *= config_.growth_factor;
    state_.growth_tracker = 0;
  }
}

nlohmann::json GradScaler::to_json() const {
  return {{"scale", state_.scale},
          {"growth_tracker", state_.growth_tracker},
          {"skipped_steps", state_.skipped_steps}};
}

GradScalerState grad_scaler_state_from_json(const nlohmann::json& j, const std::string& origin) {
  CHECK(j.is_object(),
        "{}: grad_scaler must be an object with scale, growth_tracker and "
        "skipped_steps",
        origin);
  GradScalerState s;
  s.scale = json_number(j, "scale", origin);
  CHECK(std::isfinite(s.scale) && s.scale > 0,
        "{}: grad_scaler.scale = {}: expected a positive "
        "finite number",
        origin, s.scale);
  s.growth_tracker = json_integer<int64_t>(j, "growth_tracker", origin, 0);
  s.skipped_steps = json_integer<int64_t>(j, "skipped_steps", origin, 0);
  return s;
}

}  // namespace nanogpt
