// OptimizerStep: what happens to the gradients after the backward of a step (without ZeRO-1):
// float16's unscale, the global gradient norm (of the unscaled gradients; non-finite when any is
// inf/nan), clipping, the optimizer update, the 16-bit weight copy and zeroing the gradients.
//   fused=False: one pass over memory each (GradScaler::unscale, clip_grad_norm, Optimizer::step,
//                GPT::zero_grad; the 16-bit copy is refreshed by the next forward).
//   fused=True:  two passes: a read-only one for the norm (grad_global_norm of g * 1/scale), then
//                Optimizer::step_fused, which applies unscale x clip on the fly and writes params,
//                optimizer state, the 16-bit copy and zeroed gradients in one pass.
// Both give the same parameters, state and norm bit for bit (tests/train/optimizer_step_test.cpp).
#pragma once

#include "model/gpt.h"
#include "optim/grad_scaler.h"
#include "optim/optimizer.h"

namespace nanogpt {

class OptimizerStep {
 public:
  explicit OptimizerStep(bool fused) : fused_(fused) {}

  // The global norm of the unscaled gradients, before clipping to max_norm (<= 0: no clipping).
  // fused=False: leaves the gradients unscaled and clipped in place, as today's passes do.
  double measure(Backend& backend, GPT& model, const GradScaler& scaler, double max_norm);
  // The update at `lr` with measure()'s unscaled, clipped gradients. Leaves the gradients zeroed.
  void apply(GPT& model, Optimizer& optimizer, double lr);
  // Bytes the last measure() + apply() moved over memory (for --profile's optimizer row), counting
  // each pass over an arena of total_numel floats; state_tensors: the optimizer's (AdamW 2).
  double bytes_moved(const GPT& model, int state_tensors) const;

 private:
  bool fused_;
  float unscale_ = 1.0f;  // measure()'s 1/scale and clip factor (fused: applied by apply())
  float clip_ = 1.0f;
  bool unscale_pass_ = false, clip_pass_ = false;  // fused=False: which in-place passes ran
};

}  // namespace nanogpt
