// The exponential moving average of the weights: its update, its state and its swap into the
// weights for evaluations (train/weight_ema.h).
#include "train/weight_ema.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "kernels/backend.h"

namespace nanogpt {

WeightEma::WeightEma(Backend& backend, double decay, int64_t from, int64_t numel,
                     MemoryTracker* tracker)
    : backend_(&backend), decay_(decay), from_(from) {
  CHECK(std::isfinite(decay) && decay >= 0 && decay < 1,
        "ema_decay = {}: expected 0 (off) or a decay in (0, 1), e.g. --ema_decay=0.9", decay);
  CHECK(from >= 0, "ema_from = {}: expected an iteration >= 0", from);
  if (enabled()) avg_ = Buffer<float>(static_cast<size_t>(numel), tracker, &backend);
}

void WeightEma::start(const float* weights) {
  if (!enabled()) return;
  backend_->copy_bytes(avg_.data(), weights, avg_.size() * sizeof(float));
  active_ = true;
}

void WeightEma::after_step(const float* weights, int64_t iter) {
  if (!enabled() || iter < from_ - 1) return;
  if (iter == from_ - 1 || !active_) {
    start(weights);
    return;
  }
  backend_->lerp_toward(avg_.data(), weights, static_cast<int64_t>(avg_.size()),
                        static_cast<float>(decay_));
}

nlohmann::json WeightEma::to_json() const {
  return {{"decay", decay_}, {"from", from_}, {"active", active_}};
}

void WeightEma::restore(const nlohmann::json& state, const std::string& where) {
  const bool saved = state.is_object() && state.contains("decay");
  CHECK(!saved || (state["decay"].is_number() && state.contains("from") &&
                   state["from"].is_number_integer() && state.contains("active") &&
                   state["active"].is_boolean()),
        "{}: \"ema\" must hold a number \"decay\", an integer \"from\" and a boolean "
        "\"active\"; found {} (the file is damaged: resume from another checkpoint or start a new "
        "out_dir)",
        where, state.dump());
  const double saved_decay = saved ? state["decay"].get<double>() : 0.0;
  const int64_t saved_from = saved ? state["from"].get<int64_t>() : 0;
  CHECK(saved_decay == decay_ && (!enabled() || saved_from == from_),
        "{}: the run was trained with ema_decay = {} and ema_from = {}, the config asks for "
        "ema_decay = {} and ema_from = {}: resume with --ema_decay={} --ema_from={} (the average "
        "is part of the training state), or start a new out_dir",
        where, saved_decay, saved_from, decay_, from_, saved_decay, saved_from);
  active_ = enabled() && state["active"].get<bool>();
}

void WeightEma::swap_with(std::span<float> weights) {
  CHECK(weights.size() == avg_.size(), "WeightEma: {} weights against an average of {}",
        weights.size(), avg_.size());
  if (backend_->host_addressable()) {
    std::swap_ranges(weights.begin(), weights.end(), avg_.data());
    return;
  }
  const size_t bytes = avg_.size() * sizeof(float);
  if (staging_.size() != avg_.size()) staging_ = Buffer<float>(avg_.size(), nullptr, backend_);
  backend_->copy_bytes(staging_.data(), weights.data(), bytes);
  backend_->copy_bytes(weights.data(), avg_.data(), bytes);
  backend_->copy_bytes(avg_.data(), staging_.data(), bytes);
}

EvaluateOnAverage::~EvaluateOnAverage() {
  if (ema_) ema_->swap_with(weights_);
}

}  // namespace nanogpt
