// The optimizer factory, and how much state each optimizer keeps.
#include "optim/optimizer.h"

#include "core/check.h"
#include "optim/adamw.h"
#include "optim/sgd.h"

namespace nanogpt {

int optimizer_state_tensor_count(const OptimConfig& config) {
  if (config.optimizer == "sgd") return config.momentum > 0.0 ? 1 : 0;
  return 2;
}

std::unique_ptr<Optimizer> make_optimizer(const OptimConfig& config, const ParamTable& table,
                                          MemoryTracker* tracker) {
  config.validate();
  std::unique_ptr<Optimizer> optimizer;
  if (config.optimizer == "sgd") {
    optimizer = std::make_unique<Sgd>(table, config.momentum, config.weight_decay, tracker);
  } else {
    optimizer = std::make_unique<AdamW>(table, config.beta1, config.beta2, config.weight_decay,
                                        1e-8, tracker);
  }
  // The estimator sizes optimizer state from optimizer_state_tensor_count: keep them in step.
  CHECK(static_cast<int>(optimizer->state_tensors().size()) ==
            optimizer_state_tensor_count(config),
        "internal: optimizer '{}' keeps {} state tensors but optimizer_state_tensor_count says {}",
        config.optimizer, optimizer->state_tensors().size(), optimizer_state_tensor_count(config));
  return optimizer;
}

}  // namespace nanogpt
