// nanoGPT's learning-rate schedule, its linear/constant variants and warmup-stable-decay.
#include "optim/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace nanogpt {

namespace {

// Warmup-stable-decay after warmup: flat at learning_rate, then the cooldown to min_lr that ends
// at lr_decay_iters.
double warmup_stable_decay_at(const OptimConfig& c, int64_t it) {
  const double end = static_cast<double>(c.lr_decay_iters);
  const double start = std::max(static_cast<double>(c.warmup_iters),
                                (1.0 - c.cooldown_fraction) * end);
  const double at = static_cast<double>(it);
  if (at < start) return c.learning_rate;
  const double span = end - start;
  const double progress = span > 0 ? std::min(1.0, (at - start) / span) : 1.0;
  if (c.cooldown == "1-sqrt") {
    return c.min_lr + (1.0 - std::sqrt(progress)) * (c.learning_rate - c.min_lr);
  }
  return c.learning_rate + progress * (c.min_lr - c.learning_rate);
}

}  // namespace

double learning_rate_at(const OptimConfig& c, int64_t it) {
  if (!c.decay_lr) return c.learning_rate;
  if (it < c.warmup_iters) {
    return c.learning_rate * static_cast<double>(it + 1) / static_cast<double>(c.warmup_iters + 1);
  }
  if (c.lr_schedule == "constant") return c.learning_rate;
  if (it > c.lr_decay_iters) return c.min_lr;
  if (c.lr_schedule == "wsd") return warmup_stable_decay_at(c, it);
  const int64_t span = c.lr_decay_iters - c.warmup_iters;
  const double ratio =
      span > 0 ? static_cast<double>(it - c.warmup_iters) / static_cast<double>(span) : 1.0;
  if (c.lr_schedule == "linear") return c.learning_rate + ratio * (c.min_lr - c.learning_rate);
  const double coeff = 0.5 * (1.0 + std::cos(std::numbers::pi * ratio));
  return c.min_lr + coeff * (c.learning_rate - c.min_lr);
}

}  // namespace nanogpt
