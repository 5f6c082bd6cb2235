// OptimConfig: optimizer and learning-rate schedule settings (nanoGPT's key names and defaults).
// Each key is declared once in visit(); that drives parsing, --help, printing and saving.
#pragma once

#include <cstdint>
#include <string>

namespace nanogpt {

struct OptimConfig {
  std::string optimizer = "adamw";
  double learning_rate = 6e-4;
  double weight_decay = 0.1;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double momentum = 0.9;
  double grad_clip = 1.0;
  bool decay_lr = true;
  std::string lr_schedule = "cosine";
  int64_t warmup_iters = 2000;
  int64_t lr_decay_iters = 600000;
  double min_lr = 6e-5;
  double cooldown_fraction = 0.2;    // lr_schedule 'wsd' only
  std::string cooldown = "linear";  // lr_schedule 'wsd' only

  template <typename Visitor>
  void visit(Visitor&& v) {
    v("optimizer", optimizer,
      "'adamw' (decoupled weight decay) or 'sgd' (momentum, coupled decay)");
    v("learning_rate", learning_rate, "peak learning rate");
    v("weight_decay", weight_decay, "weight decay on matrices/embeddings (tensors with >= 2 dims)");
    v("beta1", beta1, "AdamW first-moment decay");
    v("beta2", beta2, "AdamW second-moment decay");
    v("momentum", momentum, "SGD momentum (0 = plain SGD)");
    v("grad_clip", grad_clip, "clip the global gradient norm to this value; 0 = off");
    v("decay_lr", decay_lr, "use lr_schedule (warmup + decay); False = constant learning_rate");
    v("lr_schedule", lr_schedule,
      "'cosine' (nanoGPT), 'linear', 'constant' (after warmup) or 'wsd' (warmup-stable-decay: "
      "learning_rate held until the cooldown, see cooldown_fraction and cooldown)");
    v("warmup_iters", warmup_iters, "linear warmup steps");
    v("lr_decay_iters", lr_decay_iters, "step at which the decay reaches min_lr (~ max_iters)");
    v("min_lr", min_lr, "learning rate at the end of decay (~ learning_rate / 10)");
    v("cooldown_fraction", cooldown_fraction,
      "lr_schedule 'wsd': the cooldown to min_lr takes this fraction (0 < f <= 1) of "
      "lr_decay_iters and ends at lr_decay_iters, where cosine's decay ends (it starts at "
      "(1 - f) * lr_decay_iters, or at the end of warmup if that is later)");
    v("cooldown", cooldown,
      "lr_schedule 'wsd': shape of the cooldown, 'linear' (the trapezoid) or '1-sqrt' "
      "(learning_rate scaled by 1 - sqrt(progress) towards min_lr)");
  }

  // Throws nanogpt::Error naming the key and what to change.
  void validate() const;
};

}  // namespace nanogpt
