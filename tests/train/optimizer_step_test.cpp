// OptimizerStep on a real model: fused=True (norm pass, then one pass for unscale x clip, AdamW,
// the 16-bit weight copy and zeroed gradients) and fused=False (one pass per stage) train the same
// model bit for bit, in float32, bfloat16 and float16 (with loss scaling), with clipping active.
#include "train/optimizer_step.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/rng.h"
#include "kernels/cpu_backend.h"
#include "optim/optimizer.h"

namespace nanogpt {
namespace {

struct Trace {
  std::vector<double> norms;
  std::vector<float> losses;
  std::vector<float> params;
};

Trace train(DType dtype, bool fused) {
  ModelConfig c;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 32;
  c.block_size = 16;
  c.vocab_size = 61;
  c.bias = true;
  CpuBackend ctx;
  GPT model(c);
  model.init_weights(3);
  model.set_dtype(dtype);
  OptimConfig oc;
  auto opt = make_optimizer(oc, model.table());
  GradScaler scaler(/*enabled=*/dtype == DType::kF16);
  OptimizerStep step(fused);
  const int B = 2, T = 16;
  Rng rng(5);
  std::vector<int> x(B * T), y(B * T);
  Trace trace;
  model.zero_grad();
  for (int k = 0; k < 4; ++k) {
    for (int& t : x) t = static_cast<int>(rng.uniform_int(c.vocab_size));
    for (int& t : y) t = static_cast<int>(rng.uniform_int(c.vocab_size));
    trace.losses.push_back(model.forward(ctx, x.data(), y.data(), B, T, true, 7 + k, scaler.scale()));
    model.backward(ctx);
    // max_norm 0.05 clips every step here.
    const double norm = step.measure(ctx, model, scaler, 0.05);
    trace.norms.push_back(norm);
    EXPECT_GT(norm, 0.05);
    step.apply(model, *opt, 1e-3);
    int64_t nonzero = 0;
    for (float g : model.grads()) nonzero += g != 0.0f;
    EXPECT_EQ(nonzero, 0) << "apply() leaves the gradients zeroed";
  }
  // One more forward: it reads the 16-bit copy the last step left.
  trace.losses.push_back(model.forward(ctx, x.data(), y.data(), B, T, false, 0, 1.0f));
  trace.params.assign(model.params().begin(), model.params().end());
  return trace;
}

class OptimizerStepTest : public ::testing::TestWithParam<DType> {};

TEST_P(OptimizerStepTest, FusedTrainsTheSameModelBitForBit) {
  const Trace fused = train(GetParam(), true), unfused = train(GetParam(), false);
  EXPECT_EQ(fused.norms, unfused.norms);
  EXPECT_EQ(fused.losses, unfused.losses);
  EXPECT_EQ(fused.params, unfused.params);
}

INSTANTIATE_TEST_SUITE_P(Types, OptimizerStepTest,
                         ::testing::Values(DType::kF32, DType::kBF16, DType::kF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace nanogpt
