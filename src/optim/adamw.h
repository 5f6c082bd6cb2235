// AdamW with PyTorch's semantics (torch.optim.AdamW): decoupled weight decay p -= lr*wd*p applied
// only to tensors with decay=true, bias-corrected moments, eps 1e-8 added after sqrt(v_hat).
// One pass over the table through the backend's adamw_step (kernels/optimizer_ops.h; on the CPU a
// vectorized OpenMP pass); moments m, v live in the parameter layout, in the backend's memory.
#pragma once

#include <vector>

#include "core/buffer.h"
#include "kernels/optimizer_ops.h"
#include "optim/optimizer.h"

namespace nanogpt {

class AdamW : public Optimizer {
 public:
  // skip_hidden_matrices: leave the tensors with ParamSpec::hidden_matrix alone (Muon steps them;
  // their slots of m and v are Muon's to use, optim/muon.h).
  // backend: where it computes and keeps m and v (null: a CpuBackend of its own).
  AdamW(const ParamTable& table, double beta1, double beta2, double weight_decay, double eps = 1e-8,
        MemoryTracker* tracker = nullptr, bool skip_hidden_matrices = false,
        Backend* backend = nullptr);

  // t = ++steps; for each element (PyTorch's order of operations):
  //   p *= 1 - lr*wd (decay tensors only); m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g*g;
  //   p -= (lr / (1 - b1^t)) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
  void step(float* params, const float* grads, double lr) override;
  std::string name() const override { return "adamw"; }
  int64_t numel() const override { return table_.total_numel(); }
  // One pass: each element's gradient (g * unscale) * clip, the update above, round(p) into the
  // 16-bit copy, g = 0; bit-identical to the separate passes.
  void step_fused(float* params, float* grads, double lr, const FusedStepExtras& extras) override;
  std::vector<OptimizerStateTensor> state_tensors() override;
  // Learning rates of their own (config.lr_factor_of: embedding_learning_rate,
  // head_learning_rate): tensor i steps with lr * factor_i and decays by 1 - lr * factor_i * wd.
  // Without this call every factor is 1.
  void set_lr_factors(const OptimConfig& config);

 private:
  // ++steps; this step's constants, and into tensors_ each stepped tensor's step size and decay
  // factor (its lr factor).
  AdamWConstants begin_step(double lr);

  ParamTable table_;
  std::vector<ParamSpec> stepped_;  // the tensors of table_ it updates
  std::vector<double> lr_factors_;  // (stepped_.size()) learning rate over lr, 1 by default
  std::vector<AdamWTensorStep> tensors_;  // (stepped_.size()) this step's spans and factors
  double beta1_, beta2_, weight_decay_, eps_;
  Buffer<float> m_;  // (total_numel) first moments, in the backend's memory
  Buffer<float> v_;  // (total_numel) second moments, in the backend's memory
};

}  // namespace nanogpt
