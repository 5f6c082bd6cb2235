// WeightEma: an exponential moving average of the weights being trained (Polyak averaging), the
// `ema_decay` and `ema_from` keys. The trainer steps the weights as before; the average follows
// them, and every evaluation (the sampled one and the whole-split one of time to target) runs on
// the average once it holds anything. It is part of the training state: checkpoints keep it as the
// arena "ema" of optimizer.safetensors (tensors "ema.<parameter>"), so a resumed run continues it
// bit for bit. Arena layout: the model's parameter table (total_numel floats).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "core/buffer.h"

namespace nanogpt {

class Backend;  // kernels/backend.h

class WeightEma {
 public:
  WeightEma() = default;  // off
  // decay in (0, 1) (0: off, and the rest is ignored); the average of `numel` weights, kept in
  // and stepped by `backend` (the one holding the weights; it must outlive this object).
  WeightEma(Backend& backend, double decay, int64_t from, int64_t numel, MemoryTracker* tracker);

  bool enabled() const { return decay_ > 0; }
  // Whether the average holds anything yet: the step of iteration from - 1 (or a later one) ran,
  // or it came back from a checkpoint that had it.
  bool active() const { return active_; }
  double decay() const { return decay_; }
  int64_t from() const { return from_; }

  // After iteration iter's optimizer step (weights: the arena after it, numel floats): at iter
  // from - 1 the average becomes the weights; from iteration `from` on, avg = decay * avg +
  // (1 - decay) * weights. Nothing before from - 1. With from 0, call start() before the first
  // step.
  void after_step(const float* weights, int64_t iter);
  // from = 0: the average starts as the initial weights.
  void start(const float* weights);

  // The average (numel floats, the table's layout), for checkpoints.
  float* data() { return avg_.data(); }
  const float* data() const { return avg_.data(); }
  // The part of the training state (state.json "ema"), and its check and restore on resume:
  // the decay and the start must be the run's (the error names the keys and the fix).
  nlohmann::json to_json() const;
  void restore(const nlohmann::json& state, const std::string& where);

  // Exchanges the average and the weights (the same call again exchanges them back).
  void swap_with(std::span<float> weights);

 private:
  Backend* backend_ = nullptr;
  double decay_ = 0;
  int64_t from_ = 0;
  bool active_ = false;
  Buffer<float> avg_;      // (numel) in the backend's memory
  Buffer<float> staging_;  // (numel) swap_with's temporary off the host; empty on the host
};

// Evaluates on the average: swaps it into the weights for the scope's lifetime (nothing when the
// average is off or not active yet). weights() gives the model's mutable arena (GPT::params(),
// which also marks its 16-bit copy stale both ways); it is called only when there is an average to
// swap in (a model whose master weights live outside it, ZeRO-1's, has no such arena).
class EvaluateOnAverage {
 public:
  template <class Weights>
  EvaluateOnAverage(WeightEma& ema, Weights&& weights) {
    if (!ema.active()) return;
    weights_ = weights();
    ema.swap_with(weights_);
    ema_ = &ema;
  }
  ~EvaluateOnAverage();
  EvaluateOnAverage(const EvaluateOnAverage&) = delete;
  EvaluateOnAverage& operator=(const EvaluateOnAverage&) = delete;

 private:
  WeightEma* ema_ = nullptr;  // null: nothing swapped
  std::span<float> weights_;
};

}  // namespace nanogpt
