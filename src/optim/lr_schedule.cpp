// nanoGPT's learning-rate schedule and its linear/constant variants.
#include "optim/lr_schedule.h"

#include <cmath>
#include <numbers>

namespace nanogpt {

double learning_rate_at(const OptimConfig& c, int64_t it) {
  if (!c.decay_lr) return c.learning_rate;
  if (it < c.warmup_iters) {
    return c.learning_rate * static_cast<double>(it + 1) / static_cast<double>(c.warmup_iters + 1);
  }
  if (c.lr_schedule == "constant") return c.learning_rate;
  if (it > c.lr_decay_iters) return c.min_lr;
  const int64_t span = c.lr_decay_iters - c.warmup_iters;
  const double ratio =
      span > 0 ? static_cast<double>(it - c.warmup_iters) / static_cast<double>(span) : 1.0;
  if (c.lr_schedule == "linear") return c.learning_rate + ratio * (c.min_lr - c.learning_rate);
  const double coeff = 0.5 * (1.0 + std::cos(std::numbers::pi * ratio));
  return c.min_lr + coeff * (c.learning_rate - c.min_lr);
}

}  // namespace nanogpt
