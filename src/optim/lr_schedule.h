// The learning rate at each iteration: nanoGPT's get_lr (linear warmup, cosine decay to min_lr),
// plus 'linear' and 'constant' decays after the same warmup, warmup-stable-decay ('wsd'), or a
// constant rate (decay_lr False).
#pragma once

#include <cstdint>

#include "optim/optim_config.h"

namespace nanogpt {

// Learning rate for iteration `it` (0-based):
//   decay_lr False: learning_rate.
//   it < warmup_iters: learning_rate * (it + 1) / (warmup_iters + 1)          (nanoGPT)
//   it > lr_decay_iters: min_lr                                               (cosine, linear)
//   otherwise, with ratio = (it - warmup) / (lr_decay_iters - warmup) (1 when the span is 0):
//     cosine: min_lr + 0.5 * (1 + cos(pi * ratio)) * (learning_rate - min_lr)
//     linear: learning_rate + ratio * (min_lr - learning_rate)
//     constant: learning_rate (no decay after warmup)
//   wsd: learning_rate until cooldown_start = max(warmup_iters, (1 - cooldown_fraction) *
//     lr_decay_iters), then with progress p = (it - cooldown_start) / (lr_decay_iters -
//     cooldown_start) (1 when the span is 0):
//       cooldown 'linear': learning_rate + p * (min_lr - learning_rate)   (the trapezoid)
//       cooldown '1-sqrt': min_lr + (1 - sqrt(p)) * (learning_rate - min_lr)
double learning_rate_at(const OptimConfig& config, int64_t it);

}  // namespace nanogpt
