// The optimizer factory.
#include "optim/optimizer.h"

#include "optim/adamw.h"
#include "optim/sgd.h"

namespace nanogpt {

std::unique_ptr<Optimizer> make_optimizer(const OptimConfig& config, const ParamTable& table,
                                          MemoryTracker* tracker) {
  config.validate();
  if (config.optimizer == "sgd") {
    return std::make_unique<Sgd>(table, config.momentum, config.weight_decay, tracker);
  }
  return std::make_unique<AdamW>(table, config.beta1, config.beta2, config.weight_decay, 1e-8,
                                 tracker);
}

}  // namespace nanogpt
