// SGD's fused update: one pass per tensor inside one OpenMP region, each thread's slice through
// the dispatched element loop (optim/elementwise.h).
#include "optim/sgd.h"

#include <omp.h>

#include "optim/elementwise.h"

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
  {
    const int64_t nt = omp_get_num_threads(), tid = omp_get_thread_num();
    for (int s = 0; s < n_specs; ++s) {
      const auto [begin, end] = optim_loops::thread_slice(specs[s].numel, nt, tid);
      const int64_t off = specs[s].offset + begin;
      const float wd_s = specs[s].decay ? wd : 0.0f;
      if (use_momentum) {
        optim_loops::sgd_momentum(params + off, grads + off, buf_all + off, end - begin, lr_f, wd_s,
                                  mu);
      } else {
        optim_loops::sgd_plain(params + off, grads + off, end - begin, lr_f, wd_s);
      }
    }
  }
}

std::vector<OptimizerStateTensor> Sgd::state_tensors() {
  if (buf_.empty()) return {};
  return {{"momentum", buf_.data(), static_cast<int64_t>(buf_.size())}};
}

}  // namespace nanogpt
