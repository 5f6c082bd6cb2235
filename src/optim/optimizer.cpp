// The optimizer factory, and how much state each optimizer keeps.
#include "optim/optimizer.h"

#include <utility>

#include "core/check.h"
#include "kernels/cpu_backend.h"
#include "optim/adamw.h"
#include "optim/muon.h"
#include "optim/sgd.h"

namespace nanogpt {

OptimizerBackend::OptimizerBackend(Backend* given) : backend_(given) {
  if (!backend_) {
    owned_ = std::make_unique<CpuBackend>();
    backend_ = owned_.get();
  }
}
OptimizerBackend::~OptimizerBackend() = default;
OptimizerBackend::OptimizerBackend(OptimizerBackend&&) noexcept = default;

void Optimizer::step_fused(float* params, float* grads, double lr, const FusedStepExtras& x) {
  const int64_t n = numel();
  Backend& b = backend();
  const TensorSpan all[] = {{0, n}};
  // (g * unscale) * clip: two float products, one pass each (multiplying by 1 changes nothing).
  if (x.grad_unscale != 1.0f) b.scale_tensors(grads, all, x.grad_unscale);
  if (x.grad_clip != 1.0f) b.scale_tensors(grads, all, x.grad_clip);
  step(params, grads, lr);
  if (x.params_lowp) b.convert(x.params_lowp, params, n);
  if (x.zero_grads) b.fill_zero(TypedPtr(grads), n);
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
    optimizer = std::make_unique<Sgd>(stepped, config.momentum, config.weight_decay, tracker,
                                      runtime.backend);
  } else if (config.optimizer == "muon") {
    optimizer = std::make_unique<Muon>(table, config, tracker, runtime);
  } else {
    auto adamw = std::make_unique<AdamW>(stepped, config.beta1, config.beta2, config.weight_decay,
                                         1e-8, tracker, /*skip_hidden_matrices=*/false,
                                         runtime.backend);
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
