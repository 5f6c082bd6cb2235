// SGD with momentum, PyTorch semantics (torch.optim.SGD, dampening 0, no Nesterov). Weight decay is
// COUPLED as in PyTorch's SGD: d = g + wd*p is what enters the momentum buffer (an L2 penalty), and
// only for tensors with decay=true:  buf = momentum*buf + d;  p -= lr*buf  (buf = d when momentum
// 0).
#pragma once

#include "core/buffer.h"
#include "optim/optimizer.h"

namespace nanogpt {

class Sgd : public Optimizer {
 public:
  Sgd(const ParamTable& table, double momentum, double weight_decay,
      MemoryTracker* tracker = nullptr);

  void step(float* params, const float* grads, double lr) override;
  std::string name() const override { return "sgd"; }
  int64_t numel() const override { return table_.total_numel(); }
  // {"momentum"} when momentum > 0, else nothing.
  std::vector<OptimizerStateTensor> state_tensors() override;

 private:
  ParamTable table_;
  double momentum_, weight_decay_;
  Buffer<float> buf_;  // (total_numel) momentum buffer; empty when momentum == 0
};

}  // namespace nanogpt
