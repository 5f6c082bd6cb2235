// SGD with momentum, PyTorch semantics (torch.optim.SGD, dampening 0, no Nesterov). Weight decay is
// COUPLED as in PyTorch's SGD: d = g + wd*p is what enters the momentum buffer (an L2 penalty), and
// only for tensors with decay=true:  buf = momentum*buf + d;  p -= lr*buf  (buf = d when momentum
// 0).
#pragma once

#include <vector>

#include "core/buffer.h"
#include "kernels/optimizer_ops.h"
#include "optim/optimizer.h"

namespace nanogpt {

class Sgd : public Optimizer {
 public:
  // backend: where it computes and keeps its buffer (null: a CpuBackend of its own).
  Sgd(const ParamTable& table, double momentum, double weight_decay,
      MemoryTracker* tracker = nullptr, Backend* backend = nullptr);

  void step(float* params, const float* grads, double lr) override;
  std::string name() const override { return "sgd"; }
  int64_t numel() const override { return table_.total_numel(); }
  // {"momentum"} when momentum > 0, else nothing.
  std::vector<OptimizerStateTensor> state_tensors() override;

 private:
  ParamTable table_;
  double momentum_, weight_decay_;
  std::vector<SgdTensorStep> steps_of_;  // each tensor's span and weight decay
  Buffer<float> buf_;  // (total_numel) momentum buffer in the backend; empty when momentum == 0
};

}  // namespace nanogpt
