// The optimizer factory, and how much state each optimizer keeps.
#include "optim/optimizer.h"

#include <cstring>
#include <utility>

#include "core/check.h"
#include "kernels/ops_lowp.h"
#include "optim/adamw.h"
#include "optim/muon.h"
#include "optim/sgd.h"

namespace nanogpt {

void Optimizer::step_fused(float* params, float* grads, double lr, const FusedStepExtras& x) {
  const int64_t n = numel();
  if (x.grad_unscale != 1.0f || x.grad_clip != 1.0f) {
    const float u = x.grad_unscale, c = x.grad_clip;
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; ++i) grads[i] = (grads[i] * u) * c;
  }
  step(params, grads, lr);
  if (x.params_lowp) cpu::convert(x.params_lowp, params, n);
  if (x.zero_grads) std::memset(grads, 0, static_cast<size_t>(n) * sizeof(float));
}

int optimizer_state_tensor_count(const OptimConfig& config) {
  if (config.optimizer == "sgd") return config.momentum > 0.0 ? 1 : 0;
  return 2;
}

std::unique_ptr<Optimizer> make_optimizer(const OptimConfig& config, const ParamTable& table,
                                          MemoryTracker* tracker, const OptimizerRuntime& runtime) {
  config.validate();
  std::unique_ptr<Optimizer> optimizer;
  const ArenaShard& shard = runtime.shard;
  const ParamTable stepped = shard.enabled() ? table.slice(shard.begin, shard.end) : table;
  if (config.optimizer == "sgd") {
    optimizer = std::make_unique<Sgd>(stepped, config.momentum, config.weight_decay, tracker);
  } else if (config.optimizer == "muon") {
    optimizer = std::make_unique<Muon>(table, config, tracker, runtime);
  } else {
    auto adamw = std::make_unique<AdamW>(stepped, config.beta1, config.beta2, config.weight_decay,
                                         1e-8, tracker);
    adamw->set_lr_factors(config);
    optimizer = std::move(adamw);
  }
  // The estimator sizes optimizer state from optimizer_state_tensor_count: keep them in step.
  CHECK(static_cast<int>(optimizer->state_tensors().size()) == optimizer_state_tensor_count(config),
        "internal: optimizer '{}' keeps {} state tensors but optimizer_state_tensor_count says {}",
        config.optimizer, optimizer->state_tensors().size(), optimizer_state_tensor_count(config));
  return optimizer;
}

}  // namespace nanogpt
