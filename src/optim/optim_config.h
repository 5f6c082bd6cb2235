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
  double embedding_learning_rate = 0;  // 0: learning_rate (AdamW's group, any optimizer but sgd)
  double head_learning_rate = 0;       // 0: learning_rate
  double cooldown_fraction = 0.2;    // lr_schedule 'wsd' only
  std::string cooldown = "linear";  // lr_schedule 'wsd' only
  // optimizer 'muon' only (optim/muon.h)
  double muon_learning_rate = 0.02;
  double muon_momentum = 0.95;
  bool muon_nesterov = true;
  int64_t muon_ns_steps = 5;
  double muon_weight_decay = 0.0;
  int64_t muon_momentum_warmup_iters = 0;
  double muon_momentum_start = 0.85;

  template <typename Visitor>
  void visit(Visitor&& v) {
    v("optimizer", optimizer,
      "'adamw' (decoupled weight decay), 'sgd' (momentum, coupled decay) or 'muon' (Muon for the "
      "four matmul weights of each block, AdamW with learning_rate / weight_decay / beta1 / beta2 "
      "for the embeddings, gains and biases; see the muon_* keys)");
    v("learning_rate", learning_rate,
      "peak learning rate (optimizer 'muon': of the AdamW group; the schedule scales "
      "muon_learning_rate by the same factor lr(t) / learning_rate)");
    v("weight_decay", weight_decay,
      "weight decay on matrices/embeddings (tensors with >= 2 dims; optimizer 'muon': of the AdamW "
      "group, see muon_weight_decay)");
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
    v("embedding_learning_rate", embedding_learning_rate,
      "optimizers 'adamw' and 'muon': peak learning rate of the embeddings (wte, wpe; with a "
      "tied head wte is the head too), scheduled like learning_rate (times lr(t) / "
      "learning_rate); 0 = learning_rate");
    v("head_learning_rate", head_learning_rate,
      "optimizers 'adamw' and 'muon': peak learning rate of the untied head (lm_head, "
      "tie_embeddings = False), scheduled like learning_rate; 0 = learning_rate");
    v("cooldown_fraction", cooldown_fraction,
      "lr_schedule 'wsd': the cooldown to min_lr takes this fraction (0 < f <= 1) of "
      "lr_decay_iters and ends at lr_decay_iters, where cosine's decay ends (it starts at "
      "(1 - f) * lr_decay_iters, or at the end of warmup if that is later)");
    v("cooldown", cooldown,
      "lr_schedule 'wsd': shape of the cooldown, 'linear' (the trapezoid) or '1-sqrt' "
      "(learning_rate scaled by 1 - sqrt(progress) towards min_lr)");
    v("muon_learning_rate", muon_learning_rate,
      "optimizer 'muon': peak learning rate of the Muon group (the hidden matrices), scheduled "
      "like learning_rate (times lr(t) / learning_rate)");
    v("muon_momentum", muon_momentum,
      "optimizer 'muon': momentum mu of the Muon group, buf = mu * buf + grad (0 <= mu < 1)");
    v("muon_nesterov", muon_nesterov,
      "optimizer 'muon': Nesterov momentum, orthogonalize grad + mu * buf; False: buf itself");
    v("muon_ns_steps", muon_ns_steps,
      "optimizer 'muon': Newton-Schulz iterations of the quintic (a, b, c) = (3.4445, -4.7750, "
      "2.0315) that orthogonalize each update (1 to 100; 5 is the published choice)");
    v("muon_weight_decay", muon_weight_decay,
      "optimizer 'muon': decoupled weight decay of the Muon group, p *= 1 - lr * "
      "muon_weight_decay before the update (0 = off)");
    v("muon_momentum_warmup_iters", muon_momentum_warmup_iters,
      "optimizer 'muon': the Muon momentum goes linearly from muon_momentum_start to "
      "muon_momentum over this many optimizer steps (at step k: start + (mu - start) * min(1, k / "
      "iters)); 0 = off, muon_momentum from the first step");
    v("muon_momentum_start", muon_momentum_start,
      "optimizer 'muon': the Muon momentum at the first step of muon_momentum_warmup_iters "
      "(0 <= start < 1)");
  }

  // The AdamW group's learning rate of tensor `param_name` over learning_rate: the factor of
  // embedding_learning_rate (wte, wpe) or head_learning_rate (lm_head) when set, else 1.
  double lr_factor_of(const std::string& param_name) const;

  // Throws nanogpt::Error naming the key and what to change.
  void validate() const;

 private:
  void validate_muon() const;  // the muon_* keys
};

}  // namespace nanogpt
