// Optimizer: the interface the trainer steps (AdamW, SGD), with its state exposed as named arenas
// in the parameter layout for checkpointing, and the factory from OptimConfig.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/memory.h"
#include "kernels/dtype.h"
#include "model/params.h"
#include "optim/optim_config.h"

namespace nanogpt {

// A view of one state arena: table.total_numel() floats, tensor k at specs()[k].offset.
struct OptimizerStateTensor {
  std::string name;  // "m", "v" (AdamW) or "momentum" (SGD)
  float* data = nullptr;
  int64_t numel = 0;
};

// What the fused optimizer step (fused=True) does besides the update, in the same pass.
struct FusedStepExtras {
  float grad_unscale = 1.0f;  // the gradient used is (g * grad_unscale) * grad_clip: float
  float grad_clip = 1.0f;     // products in the order GradScaler::unscale and clip_grad_norm apply
                              // them (1 changes nothing)
  TypedPtr params_lowp;       // nullable: (total_numel) receives round(params) after the update,
                              // the 16-bit weight copy (GPT::params_lowp_for_update)
  bool zero_grads = false;    // grads = 0 once used (what the next step's backward needs)
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // One update of every tensor of the table. params, grads: arenas of table.total_numel() floats.
  virtual void step(float* params, const float* grads, double lr) = 0;
  // The same update on the gradients as `extras` transforms them, then the 16-bit copy and the
  // zeroing: bit-identical to scaling grads in place, step(), cpu::convert of the params and
  // zeroing grads, one pass each (which this default does; AdamW does all of it in one pass).
  virtual void step_fused(float* params, float* grads, double lr, const FusedStepExtras& extras);
  virtual std::string name() const = 0;
  // Floats in the params / grads arenas it steps (its table's total_numel()).
  virtual int64_t numel() const = 0;
  // Views of the state arenas (valid while the optimizer lives); fill them to restore a checkpoint.
  virtual std::vector<OptimizerStateTensor> state_tensors() = 0;
  // Number of step() calls so far (AdamW's bias correction uses it); restore with set_steps.
  int64_t steps() const { return steps_; }
  void set_steps(int64_t steps) { steps_ = steps; }

 protected:
  int64_t steps_ = 0;
};

// State tensors (each table.total_numel() floats) the optimizer of `config` keeps: AdamW 2 (m, v),
// SGD 1 with momentum, 0 without. The optimizers allocate exactly this many; the estimator uses it.
int optimizer_state_tensor_count(const OptimConfig& config);

// AdamW or SGD per config.optimizer (validated). State buffers are zeroed and sized for `table`.
std::unique_ptr<Optimizer> make_optimizer(const OptimConfig& config, const ParamTable& table,
                                          MemoryTracker* tracker = nullptr);

}  // namespace nanogpt
