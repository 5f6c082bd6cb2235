// OptimConfig validation.
#include "optim/optim_config.h"

#include <cmath>
#include <utility>

#include "core/check.h"

namespace nanogpt {

void OptimConfig::validate() const {
  CHECK(optimizer == "adamw" || optimizer == "sgd" || optimizer == "muon",
        "optimizer = '{}': expected 'adamw', 'sgd' or 'muon'", optimizer);
  CHECK(std::isfinite(learning_rate) && learning_rate >= 0.0,
        "learning_rate = {}: expected a finite value >= 0 (e.g. 6e-4)", learning_rate);
  CHECK(std::isfinite(min_lr) && min_lr >= 0.0,
        "min_lr = {}: expected a finite value >= 0 (e.g. learning_rate / 10)", min_lr);
  CHECK(std::isfinite(weight_decay) && weight_decay >= 0.0,
        "weight_decay = {}: expected >= 0 (e.g. 0.1)", weight_decay);
  CHECK(beta1 >= 0.0 && beta1 < 1.0, "beta1 = {}: expected 0 <= beta1 < 1 (e.g. 0.9)", beta1);
  CHECK(beta2 >= 0.0 && beta2 < 1.0, "beta2 = {}: expected 0 <= beta2 < 1 (e.g. 0.95)", beta2);
  CHECK(momentum >= 0.0 && momentum < 1.0, "momentum = {}: expected 0 <= momentum < 1", momentum);
  CHECK(std::isfinite(grad_clip) && grad_clip >= 0.0,
        "grad_clip = {}: expected >= 0 (0 turns clipping off)", grad_clip);
  CHECK(lr_schedule == "cosine" || lr_schedule == "linear" || lr_schedule == "constant" ||
            lr_schedule == "wsd",
        "lr_schedule = '{}': expected 'cosine', 'linear', 'constant' or 'wsd'", lr_schedule);
  CHECK(std::isfinite(cooldown_fraction) && cooldown_fraction > 0.0 && cooldown_fraction <= 1.0,
        "cooldown_fraction = {}: expected a fraction of lr_decay_iters with 0 < f <= 1 (e.g. 0.2 "
        "for a cooldown over the last 20%)",
        cooldown_fraction);
  CHECK(cooldown == "linear" || cooldown == "1-sqrt",
        "cooldown = '{}': expected 'linear' or '1-sqrt' (the shape of lr_schedule 'wsd''s "
        "cooldown)",
        cooldown);
  CHECK(warmup_iters >= 0, "warmup_iters = {}: expected >= 0", warmup_iters);
  for (const auto& [key, value] : {std::pair{"embedding_learning_rate", embedding_learning_rate},
                                   std::pair{"head_learning_rate", head_learning_rate}}) {
    CHECK(std::isfinite(value) && value >= 0.0,
          "{} = {}: expected a finite learning rate >= 0 (0: learning_rate's)", key, value);
    CHECK(value == 0.0 || learning_rate > 0.0,
          "{} = {} with learning_rate = 0: the schedule scales it by lr(t) / learning_rate, which "
          "needs learning_rate > 0",
          key, value);
    CHECK(value == 0.0 || optimizer != "sgd",
          "{} = {} with optimizer = 'sgd': learning rates of their own for the embeddings and "
          "the head are for 'adamw' and 'muon' (AdamW's group); drop the key or change optimizer",
          key, value);
  }
  validate_muon();
  if (decay_lr && lr_schedule != "constant") {
    CHECK(lr_decay_iters >= warmup_iters,
          "lr_decay_iters = {} is less than warmup_iters = {}: the decay must end after warmup "
          "(set lr_decay_iters to about max_iters)",
          lr_decay_iters, warmup_iters);
  }
}

double OptimConfig::lr_factor_of(const std::string& param_name) const {
  if (embedding_learning_rate > 0.0 && (param_name == "wte.weight" || param_name == "wpe.weight")) {
    return embedding_learning_rate / learning_rate;
  }
  if (head_learning_rate > 0.0 && param_name == "lm_head.weight") {
    return head_learning_rate / learning_rate;
  }
  return 1.0;
}

void OptimConfig::validate_muon() const {
  // Checked whatever the optimizer, so that a bad value is caught before it is switched on.
  CHECK(std::isfinite(muon_learning_rate) && muon_learning_rate >= 0.0,
        "muon_learning_rate = {}: expected a finite value >= 0 (e.g. 0.02, the published Muon "
        "rate)",
        muon_learning_rate);
  CHECK(muon_momentum >= 0.0 && muon_momentum < 1.0,
        "muon_momentum = {}: expected 0 <= muon_momentum < 1 (e.g. 0.95)", muon_momentum);
  CHECK(muon_momentum_start >= 0.0 && muon_momentum_start < 1.0,
        "muon_momentum_start = {}: expected 0 <= muon_momentum_start < 1 (e.g. 0.85)",
        muon_momentum_start);
  CHECK(muon_ns_steps >= 1 && muon_ns_steps <= 100,
        "muon_ns_steps = {}: expected 1 to 100 Newton-Schulz iterations (5 is the published "
        "choice)",
        muon_ns_steps);
  CHECK(std::isfinite(muon_weight_decay) && muon_weight_decay >= 0.0,
        "muon_weight_decay = {}: expected a finite value >= 0 (0 = off)", muon_weight_decay);
  CHECK(muon_momentum_warmup_iters >= 0,
        "muon_momentum_warmup_iters = {}: expected >= 0 optimizer steps (0 = no momentum warmup)",
        muon_momentum_warmup_iters);
  if (optimizer == "muon") {
    CHECK(learning_rate > 0.0,
          "learning_rate = {} with optimizer = 'muon': the schedule scales muon_learning_rate by "
          "lr(t) / learning_rate, which needs learning_rate > 0 (e.g. 6e-4); to freeze the AdamW "
          "group lower it, not to 0",
          learning_rate);
  }
}

}  // namespace nanogpt
