// SGD's update: one pass over the table through the backend's sgd_step (kernels/optimizer_ops.h;
// on the CPU one OpenMP region, each thread's slice of every tensor).
#include "optim/sgd.h"

#include "kernels/backend.h"

namespace nanogpt {

Sgd::Sgd(const ParamTable& table, double momentum, double weight_decay, MemoryTracker* tracker,
         Backend* backend)
    : Optimizer(backend), table_(table), momentum_(momentum), weight_decay_(weight_decay) {
  const float wd = static_cast<float>(weight_decay_);
  for (const auto& s : table_.specs()) {
    steps_of_.push_back({{s.offset, s.numel}, s.decay ? wd : 0.0f});
  }
  if (momentum_ > 0.0) {
    buf_ = Buffer<float>(static_cast<size_t>(table.total_numel()), tracker, &this->backend());
  }
}

void Sgd::step(float* params, const float* grads, double lr) {
  ++steps_;
  backend().sgd_step(params, grads, momentum_ > 0.0 ? buf_.data() : nullptr, steps_of_,
                     static_cast<float>(lr), static_cast<float>(momentum_));
}

std::vector<OptimizerStateTensor> Sgd::state_tensors() {
  if (buf_.empty()) return {};
  return {{"momentum", buf_.data(), static_cast<int64_t>(buf_.size())}};
}

}  // namespace nanogpt
