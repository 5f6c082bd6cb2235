// The learning-rate schedule at key iterations (nanoGPT's get_lr and its edge cases), config
// validation, and global-norm gradient clipping (vs torch.nn.utils.clip_grad_norm_).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numbers>

#include "kernels/cpu_backend.h"
#include "core/check.h"
#include "optim/grad_clip.h"
#include "optim/lr_schedule.h"
#include "optim_fixture.h"

namespace nanogpt {
namespace {

using testing::load_optim_fixture;
using testing::tensor_field;
using testing::tiny_model_config;
using testing::to_arena;

TEST(LrSchedule, NanoGptDefaultsAtKeyIterations) {
  OptimConfig c;  // lr 6e-4, min 6e-5, warmup 2000, decay 600000
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 0), 6e-4 * 1 / 2001);
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 1), 6e-4 * 2 / 2001);
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 1999), 6e-4 * 2000 / 2001);
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 2000), 6e-4);                   // ratio 0: cos(0) = 1
  EXPECT_NEAR(learning_rate_at(c, 301000), (6e-4 + 6e-5) / 2, 1e-15);  // ratio 0.5
  const double r = (450000.0 - 2000) / (600000 - 2000);
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 450000),
                   6e-5 + 0.5 * (1 + std::cos(std::numbers::pi * r)) * (6e-4 - 6e-5));
  EXPECT_NEAR(learning_rate_at(c, 600000), 6e-5, 1e-18);  // ratio 1: cos(pi) = -1
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 600001), 6e-5);
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 10000000), 6e-5);
}

TEST(LrSchedule, ShakespeareCharConfig) {
  OptimConfig c;
  c.learning_rate = 1e-3;
  c.min_lr = 1e-4;
  c.warmup_iters = 100;
  c.lr_decay_iters = 5000;
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 0), 1e-3 / 101);
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 99), 1e-3 * 100 / 101);
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 100), 1e-3);
  EXPECT_NEAR(learning_rate_at(c, 2550), 5.5e-4, 1e-15);
  EXPECT_NEAR(learning_rate_at(c, 5000), 1e-4, 1e-18);
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 5001), 1e-4);
  // Monotone non-increasing after warmup.
  for (int it = 100; it < 5100; ++it) {
    ASSERT_LE(learning_rate_at(c, it + 1), learning_rate_at(c, it) + 1e-18) << it;
  }
}

TEST(LrSchedule, EdgeCases) {
  OptimConfig c;
  c.learning_rate = 1.0;
  c.min_lr = 0.1;
  c.warmup_iters = 0;  // no warmup: the first step is at full rate
  c.lr_decay_iters = 10;
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 0), 1.0);
  c.warmup_iters = 10;  // decay span 0: min_lr from the end of warmup on (no division by zero)
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 9), 10.0 / 11);
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 10), 0.1);
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 11), 0.1);
  c.decay_lr = false;  // constant, warmup ignored (nanoGPT)
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 0), 1.0);
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 1000), 1.0);
}

TEST(LrSchedule, LinearAndConstant) {
  OptimConfig c;
  c.learning_rate = 1.0;
  c.min_lr = 0.2;
  c.warmup_iters = 10;
  c.lr_decay_iters = 110;
  c.lr_schedule = "linear";
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 4), 5.0 / 11);
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 10), 1.0);
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 60), 0.6);
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 110), 0.2);
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 111), 0.2);
  c.lr_schedule = "constant";
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 4), 5.0 / 11);
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 60), 1.0);
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 100000), 1.0);
}

using testing::expect_invalid;

TEST(OptimConfig, ValidateNamesTheKey) {
  OptimConfig ok;
  EXPECT_NO_THROW(ok.validate());
  OptimConfig c = ok;
  c.lr_decay_iters = 100;
  expect_invalid(c, "lr_decay_iters = 100");
  c = ok;
  c.beta2 = 1.0;
  expect_invalid(c, "beta2 = 1");
  c = ok;
  c.lr_schedule = "step";
  expect_invalid(c, "lr_schedule = 'step'");
  c = ok;
  c.grad_clip = -1;
  expect_invalid(c, "grad_clip = -1");
  c = ok;
  c.learning_rate = -0.1;
  expect_invalid(c, "learning_rate = -0.1");
  c = ok;
  c.optimizer = "lion";
  expect_invalid(c, "optimizer = 'lion'");
}

TEST(GradClip, MatchesTorchClipGradNorm) {
  CpuBackend backend;  // the host: the optimizer ops run here
  const ParamTable table(tiny_model_config());
  const auto fx = load_optim_fixture();
  std::vector<float> grads = to_arena(table, tensor_field(fx, "grads", 0));
  const double norm = clip_grad_norm(backend, table, grads.data(), fx.at("clip").at("max_norm"));
  EXPECT_NEAR(norm, fx.at("clip").at("norm").get<double>(), 1e-5 * norm);
  const std::vector<float> want = to_arena(table, fx.at("clip").at("clipped"));
  for (size_t i = 0; i < grads.size(); ++i) ASSERT_NEAR(grads[i], want[i], 1e-7) << i;
  EXPECT_NEAR(grad_global_norm(backend, table, grads.data()), 0.5, 1e-5);
}

TEST(GradClip, NormInDoubleAndNoScalingBelowThreshold) {
  CpuBackend backend;  // the host: the optimizer ops run here
  ModelConfig cfg = tiny_model_config();
  cfg.n_embd = 64;
  cfg.n_head = 4;
  cfg.vocab_size = 1000;
  const ParamTable table(cfg);
  std::vector<float> grads(table.total_numel(), 0.0f);
  double want = 0.0;
  for (const auto& s : table.specs()) {
    for (int64_t i = 0; i < s.numel; ++i) {
      const float g = static_cast<float>(std::sin(0.37 * (s.offset + i))) * 1e-3f;
      grads[s.offset + i] = g;
      want += static_cast<double>(g) * g;
    }
  }
  want = std::sqrt(want);
  EXPECT_NEAR(grad_global_norm(backend, table, grads.data()), want, 1e-12);
  const std::vector<float> before = grads;
  EXPECT_NEAR(clip_grad_norm(backend, table, grads.data(), want * 2), want, 1e-12);
  EXPECT_EQ(grads, before);
  EXPECT_NEAR(clip_grad_norm(backend, table, grads.data(), 0.0), want, 1e-12);  // 0 = off
  EXPECT_EQ(grads, before);
  EXPECT_NEAR(clip_grad_norm(backend, table, grads.data(), want / 4), want, 1e-12);
  // torch's coefficient: max_norm / (norm + 1e-6).
  EXPECT_NEAR(grad_global_norm(backend, table, grads.data()), want / 4 * want / (want + 1e-6), 1e-6 * want);
}

TEST(GradClip, NonFiniteNormIsReportedNotApplied) {
  CpuBackend backend;  // the host: the optimizer ops run here
  const ParamTable table(tiny_model_config());
  std::vector<float> grads(table.total_numel(), 1.0f);
  grads[table.at("ln_f.bias").offset] = std::numeric_limits<float>::infinity();
  const std::vector<float> before = grads;
  EXPECT_TRUE(std::isinf(clip_grad_norm(backend, table, grads.data(), 1.0)));
  EXPECT_EQ(grads, before);
}

}  // namespace
}  // namespace nanogpt
