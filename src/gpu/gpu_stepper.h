// GpuStepper: the GPU model as a TokenStepper (sample/generator.h), so that `nanogpt sample
// --device=cuda` generates with the KV cache on the GPU through the same loop as the CPU.
#pragma once

#include "gpu/gpu_model.h"
#include "sample/generator.h"

namespace nanogpt {

class GpuStepper : public TokenStepper {
 public:
  explicit GpuStepper(GpuGpt& model) : model_(model) {}
  const ModelConfig& config() const override { return model_.config(); }
  void clear() override { model_.clear_cache(); }
  int length() const override { return model_.cache_length(); }
  void step(int token, int pos, float* logits_out) override {
    model_.forward_one(token, pos, logits_out);
  }

 private:
  GpuGpt& model_;
};

}  // namespace nanogpt
