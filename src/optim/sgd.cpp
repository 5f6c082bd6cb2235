// SGD's fused update: one pass per tensor inside one OpenMP region.
#include "optim/sgd.h"

namespace nanogpt {

Sgd::Sgd(const ParamTable& table, double momentum, double weight_decay, MemoryTracker* tracker)
    : table_(table), momentum_(momentum), weight_decay_(weight_decay) {
  if (momentum_ > 0.0) buf_ = Buffer<float>(static_cast<size_t>(table.total_numel()), tracker);
}

void Sgd::step(float* params, const float* grads, double lr) {
  ++steps_;
  const float mu = static_cast<float>(momentum_);
  const float wd = static_cast<float>(weight_decay_);
  const float lr_f = static_cast<float>(lr);
  const bool use_momentum = momentum_ > 0.0;
  const auto& specs = table_.specs();
  const int n_specs = static_cast<int>(specs.size());
  float* buf_all = buf_.data();
#pragma omp parallel
  for (int s = 0; s < n_specs; ++s) {
    const int64_t off = specs[s].offset, n = specs[s].numel;
    const float wd_s = specs[s].decay ? wd : 0.0f;
    float* p = params + off;       // (numel)
    const float* g = grads + off;  // (numel)
    if (use_momentum) {
      float* b = buf_all + off;  // (numel)
#pragma omp for simd schedule(static) nowait
      for (int64_t i = 0; i < n; ++i) {
        const float d = g[i] + wd_s * p[i];
        const float bi = b[i] * mu + d;
        b[i] = bi;
        p[i] -= lr_f * bi;
      }
    } else {
#pragma omp for simd schedule(static) nowait
      for (int64_t i = 0; i < n; ++i) p[i] -= lr_f * (g[i] + wd_s * p[i]);
    }
  }
}

std::vector<OptimizerStateTensor> Sgd::state_tensors() {
  if (buf_.empty()) return {};
  return {{"momentum", buf_.data(), static_cast<int64_t>(buf_.size())}};
}

}  // namespace nanogpt
