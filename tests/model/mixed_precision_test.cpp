// GPT in bfloat16 and float16 (GPT::set_dtype) against float32: gradients within a tolerance
// stated in units of the storage type's unit roundoff, the low-precision weight copy refreshed
// after a step, and the float16 underflow case: with a tiny loss scale every activation gradient
// flushes to zero without loss scaling (training does not move) and trains with the GradScaler.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/float16.h"
#include "core/rng.h"
#include "kernels/cpu_backend.h"
#include "model/gpt.h"
#include "optim/grad_scaler.h"
#include "optim/optimizer.h"
#include "random_tokens.h"

namespace nanogpt {
namespace {

using testing::random_tokens;

ModelConfig tiny(double dropout = 0.0) {
  ModelConfig c;
  c.n_layer = 2, c.n_head = 2, c.n_embd = 32, c.block_size = 16, c.vocab_size = 67;
  c.dropout = dropout;
  return c;
}

double unit_roundoff(DType t) {
  return t == DType::kBF16 ? kUnitRoundoffBf16 : kUnitRoundoffFp16;
}

// Loss and gradients of one training forward/backward in `dtype` from the same weights.
std::pair<float, std::vector<float>> loss_and_grads(DType dtype, double dropout, float grad_scale,
                                                    KernelChoices choices = {}) {
  CpuBackend ctx;
  GPT model(tiny(dropout));
  model.set_dtype(dtype);
  model.set_kernel_choices(choices);
  model.init_weights(7);
  const int B = 4, T = 16;
  const auto x = random_tokens(B * T, 67, 1), y = random_tokens(B * T, 67, 2);
  const float loss = model.forward(ctx, x.data(), y.data(), B, T, true, 99, grad_scale);
  model.backward(ctx);
  return {loss, std::vector<float>(model.grads().begin(), model.grads().end())};
}

class MixedPrecisionGpt : public ::testing::TestWithParam<DType> {};

// Each parameter tensor's gradient, relative L2 error against float32: every stored activation
// and activation gradient is rounded once per layer visit (relative error u each); over the 2
// layers and the head the errors add up to a few u, so 8 u (bf16 0.031, fp16 0.0039) is the
// stated tolerance. The loss (float32 statistics over rounded logits' inputs) within 4 u.
TEST_P(MixedPrecisionGpt, GradientsTrackFloat32) {
  const DType t = GetParam();
  const double u = unit_roundoff(t);
  const auto [loss32, g32] = loss_and_grads(DType::kF32, 0.0, 1.0f);
  const auto [loss, g] = loss_and_grads(t, 0.0, 1.0f);
  EXPECT_NEAR(loss, loss32, 4 * u * loss32);
  GPT shape(tiny());
  for (const ParamSpec& s : shape.table().specs()) {
    double err = 0, ref = 0;
    for (int64_t i = 0; i < s.numel; ++i) {
      const double d = double(g[s.offset + i]) - g32[s.offset + i];
      err += d * d;
      ref += double(g32[s.offset + i]) * g32[s.offset + i];
    }
    if (ref == 0) continue;
    EXPECT_LE(std::sqrt(err / ref), 8 * u) << s.name << " (" << dtype_name(t) << ")";
  }
}

// fused=False (matmul and GELU apart, the classifier unchunked) and fused_mlp=True (the GELU in
// the matmuls' epilogues) compute the same 16-bit model: only a few stored values may round to a
// neighbour (sums in another order), so each tensor's gradient is within u (relative L2) of the
// unfused path's and the loss within u.
TEST_P(MixedPrecisionGpt, FusedMlpEpilogueMatchesUnfused) {
  const DType t = GetParam();
  const double u = unit_roundoff(t);
  const auto [loss_f, g_f] =
      loss_and_grads(t, 0.1, 1.0f, {.naive_attention = false, .fused = true, .fused_mlp = true});
  const auto [loss_u, g_u] = loss_and_grads(t, 0.1, 1.0f, {.naive_attention = false, .fused = false});
  EXPECT_NEAR(loss_u, loss_f, u * loss_f);
  GPT shape(tiny());
  for (const ParamSpec& s : shape.table().specs()) {
    double err = 0, ref = 0;
    for (int64_t i = 0; i < s.numel; ++i) {
      const double d = double(g_u[s.offset + i]) - g_f[s.offset + i];
      err += d * d;
      ref += double(g_f[s.offset + i]) * g_f[s.offset + i];
    }
    if (ref == 0) continue;
    EXPECT_LE(std::sqrt(err / ref), u) << s.name << " (" << dtype_name(t) << ")";
  }
}

// With dropout the 16-bit attention draws its masks per batch group (ops_lowp.h): still a valid
// dropout, deterministic for the same seed.
TEST_P(MixedPrecisionGpt, DropoutRunsAreDeterministic) {
  const auto [l1, g1] = loss_and_grads(GetParam(), 0.1, 1.0f);
  const auto [l2, g2] = loss_and_grads(GetParam(), 0.1, 1.0f);
  EXPECT_EQ(l1, l2);
  EXPECT_EQ(g1, g2);
}

INSTANTIATE_TEST_SUITE_P(Types, MixedPrecisionGpt, ::testing::Values(DType::kBF16, DType::kF16),
                         [](const auto& i) { return std::string(dtype_name(i.param)); });

// The low-precision weights follow the master weights after an optimizer step (through params()).
TEST(MixedPrecisionGpt, WeightCopyIsRefreshedAfterAStep) {
  CpuBackend ctx;
  GPT model(tiny());
  model.set_dtype(DType::kBF16);
  model.init_weights(3);
  const auto x = random_tokens(64, 67, 1), y = random_tokens(64, 67, 2);
  const float before = model.forward(ctx, x.data(), y.data(), 4, 16, false);
  for (float& p : model.params()) p *= 0.5f;  // a "step"
  const float after = model.forward(ctx, x.data(), y.data(), 4, 16, false);
  GPT ref(tiny());
  ref.set_dtype(DType::kBF16);
  ref.init_weights(3);
  for (float& p : ref.params()) p *= 0.5f;
  EXPECT_NE(before, after);
  EXPECT_EQ(after, ref.forward(ctx, x.data(), y.data(), 4, 16, false));
}

// A tiny objective (loss times 2^-20, as from a tiny loss or heavy averaging): its dlogits,
// about 2^-20 / 64 rows, lie below float16's smallest subnormal (2^-24), so without loss scaling
// every gradient is exactly zero and AdamW does not move; with the GradScaler (2^16) the same run
// trains like float32.
TEST(MixedPrecisionGpt, Float16UnderflowsWithoutLossScalingAndTrainsWithIt) {
  CpuBackend backend;  // the host: the optimizer ops run here
  const float tiny_objective = std::ldexp(1.0f, -20);
  const int B = 4, T = 16, steps = 25;
  const auto x = random_tokens(B * T, 67, 1), y = random_tokens(B * T, 67, 2);
  auto train = [&](DType dtype, bool scaling, bool* all_zero_first) {
    CpuBackend ctx;
    GPT model(tiny());
    model.set_dtype(dtype);
    model.init_weights(11);
    OptimConfig oc;
    oc.learning_rate = 1e-2;
    oc.weight_decay = 0.0;
    auto opt = make_optimizer(oc, model.table());
    GradScaler scaler(scaling);
    float first = 0, last = 0;
    for (int s = 0; s < steps; ++s) {
      last = model.forward(ctx, x.data(), y.data(), B, T, true, 0, tiny_objective * scaler.scale());
      if (s == 0) first = last;
      model.backward(ctx);
      if (s == 0 && all_zero_first) {
        *all_zero_first = true;
        for (float g : model.grads()) *all_zero_first = *all_zero_first && g == 0.0f;
      }
      const bool finite = scaler.unscale(backend, model.grads());
      if (finite) opt->step(model.params().data(), model.grads().data(), oc.learning_rate);
      scaler.update(!finite);
      model.zero_grad();
    }
    return std::pair{first, last};
  };
  bool zero32 = true, zero16 = false, zero16s = true;
  const auto [f32a, f32b] = train(DType::kF32, false, &zero32);
  const auto [f16a, f16b] = train(DType::kF16, false, &zero16);
  const auto [fsa, fsb] = train(DType::kF16, true, &zero16s);
  EXPECT_FALSE(zero32);
  EXPECT_TRUE(zero16) << "float16 gradients without scaling should underflow to zero";
  EXPECT_FALSE(zero16s);
  EXPECT_EQ(f16b, f16a) << "no gradient, no movement";
  EXPECT_LT(f32b, f32a - 0.5f);
  EXPECT_LT(fsb, fsa - 0.5f);
  EXPECT_NEAR(fsb, f32b, 0.05 * f32b);  // same trajectory up to float16 rounding
}

}  // namespace
}  // namespace nanogpt
