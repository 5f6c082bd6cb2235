// The fused optimizer step (fused=True: Optimizer::step_fused with grad_global_norm of the unscaled
// gradients) against the separate passes it replaces (GradScaler::unscale, clip_grad_norm,
// Optimizer::step, the 16-bit weight copy by convert, zeroing the gradients): equal bit for bit,
// for float32 / bfloat16 / float16 weight copies, with and without loss scaling and clipping, and
// for any thread count.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cpu_backend.h"
#include "kernels/ops_lowp.h"
#include "optim/adamw.h"
#include "optim/grad_clip.h"
#include "optim/grad_scaler.h"
#include "optim/optimizer.h"
#include "optim/sgd.h"

namespace nanogpt {
namespace {

ModelConfig model_config() {
  ModelConfig c;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 24;  // tensors of odd sizes: slices and 2048-element blocks end mid-vector
  c.block_size = 9;
  c.vocab_size = 53;
  c.bias = true;
  return c;
}

std::vector<float> normal_arena(int64_t n, uint32_t seed, float stddev) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, stddev);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = normal(gen);
  return v;
}

struct StepResult {
  std::vector<double> norms;
  std::vector<float> params;
  std::vector<std::vector<float>> state;
  std::vector<uint16_t> lowp;
  std::vector<float> grads_after;  // the gradient arena after the last step
};

// Three steps of `config`'s optimizer on gradients scaled by `scale` (a GradScaler at that scale
// when scale != 1), clipped to max_norm, with a weight copy in `dtype` (none for float32).
StepResult run(const OptimConfig& config, bool fused, double scale, double max_norm, DType dtype) {
  CpuBackend backend;  // the host: the optimizer ops run here
  const ParamTable table(model_config());
  const int64_t n = table.total_numel();
  GradScaler scaler(/*enabled=*/scale != 1.0);
  scaler.set_state({scale, 0, 0});
  auto opt = make_optimizer(config, table);
  StepResult r;
  // Params and gradients live in the tensors; the arena's alignment gaps between tensors stay
  // zero (nothing writes them) as in the model.
  const std::vector<float> init = normal_arena(n, 1, 0.1f);
  r.params.assign(static_cast<size_t>(n), 0.0f);
  for (const auto& s : table.specs()) {
    std::copy(init.begin() + s.offset, init.begin() + s.offset + s.numel,
              r.params.begin() + s.offset);
  }
  r.lowp.assign(static_cast<size_t>(n), 0);
  const TypedPtr lowp = dtype == DType::kF32 ? TypedPtr() : TypedPtr(r.lowp.data(), dtype);
  for (int k = 0; k < 3; ++k) {
    // Gradients in every tensor, scaled as a scaled loss leaves them.
    const std::vector<float> noise = normal_arena(n, 10 + k, 0.05f * (k + 1));
    std::vector<float> g(static_cast<size_t>(n), 0.0f);
    for (const auto& s : table.specs()) {
      for (int64_t i = s.offset; i < s.offset + s.numel; ++i) {
        g[i] = noise[i] * static_cast<float>(scale);
      }
    }
    if (fused) {
      const double norm = grad_global_norm(backend, table, g.data(), scaler.inv_scale());
      r.norms.push_back(norm);
      FusedStepExtras x;
      x.grad_unscale = scaler.inv_scale();
      x.grad_clip = clip_coefficient(norm, max_norm);
      x.params_lowp = lowp;
      x.zero_grads = true;
      opt->step_fused(r.params.data(), g.data(), 1e-3 * (k + 1), x);
    } else {
      if (scaler.enabled()) scaler.unscale(backend, g);
      r.norms.push_back(clip_grad_norm(backend, table, g.data(), max_norm));
      opt->step(r.params.data(), g.data(), 1e-3 * (k + 1));
      if (lowp) ref::convert(lowp, r.params.data(), n);
      std::fill(g.begin(), g.end(), 0.0f);
    }
    r.grads_after = g;
  }
  for (const auto& t : opt->state_tensors()) r.state.emplace_back(t.data, t.data + t.numel);
  return r;
}

void expect_identical(const StepResult& fused, const StepResult& unfused, bool norms = true) {
  if (norms) {
    EXPECT_EQ(fused.norms, unfused.norms);
  }
  EXPECT_EQ(fused.params, unfused.params);
  EXPECT_EQ(fused.state, unfused.state);
  EXPECT_EQ(fused.lowp, unfused.lowp);
  EXPECT_EQ(fused.grads_after, unfused.grads_after);
  for (float g : fused.grads_after) ASSERT_EQ(g, 0.0f);
}

class FusedStepTest : public ::testing::TestWithParam<DType> {};

TEST_P(FusedStepTest, AdamWEqualsTheSeparatePasses) {
  const DType t = GetParam();
  OptimConfig config;  // AdamW
  config.weight_decay = 0.1;
  for (double scale : {1.0, 65536.0, 0.5}) {
    for (double max_norm : {0.0, 1e9, 0.05}) {  // off, never reached, clipping every step
      SCOPED_TRACE(::testing::Message() << "scale " << scale << " max_norm " << max_norm);
      const StepResult unfused = run(config, false, scale, max_norm, t);
      expect_identical(run(config, true, scale, max_norm, t), unfused);
      if (max_norm == 0.05) {
        EXPECT_GT(unfused.norms[0], 0.05);  // clipping did happen
      }
    }
  }
}

TEST_P(FusedStepTest, SgdEqualsTheSeparatePasses) {
  OptimConfig config;
  config.optimizer = "sgd";
  config.momentum = 0.9;
  expect_identical(run(config, true, 65536.0, 0.05, GetParam()),
                   run(config, false, 65536.0, 0.05, GetParam()));
}

INSTANTIATE_TEST_SUITE_P(WeightCopy, FusedStepTest,
                         ::testing::Values(DType::kF32, DType::kBF16, DType::kF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(FusedStep, ResultDoesNotDependOnThreadCount) {
  OptimConfig config;
  const int saved = omp_get_max_threads();
  std::vector<StepResult> results;
  for (int threads : {1, 2, 3}) {
    omp_set_num_threads(threads);
    results.push_back(run(config, true, 1024.0, 0.05, DType::kBF16));
  }
  omp_set_num_threads(saved);
  // (The norm's double sum is split per thread, so its last bits may move with the thread count;
  // here the clip factor, rounded to float, does not, and so neither does anything the step writes.)
  expect_identical(results[1], results[0], /*norms=*/false);
  expect_identical(results[2], results[0], /*norms=*/false);
}

TEST(FusedStep, NormOfUnscaledGradientsFindsInfAndNan) {
  CpuBackend backend;  // the host: the optimizer ops run here
  const ParamTable table(model_config());
  const int64_t n = table.total_numel();
  std::vector<float> g = normal_arena(n, 3, 1.0f);
  // Equal to unscaling in place first, bit for bit.
  std::vector<float> unscaled = g;
  for (float& x : unscaled) x *= 1.0f / 4096.0f;
  EXPECT_EQ(grad_global_norm(backend, table, g.data(), 1.0f / 4096.0f),
            grad_global_norm(backend, table, unscaled.data()));
  g[n / 2] = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(std::isfinite(grad_global_norm(backend, table, g.data(), 1.0f / 4096.0f)));
  g[n / 2] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(std::isfinite(grad_global_norm(backend, table, g.data(), 1.0f / 4096.0f)));
  // A finite gradient that overflows once unscaled (scale < 1) counts as inf, as unscale() says.
  g[n / 2] = 3e38f;
  EXPECT_FALSE(std::isfinite(grad_global_norm(backend, table, g.data(), 2.0f)));
}

TEST(FusedStep, ClipCoefficientIsClipGradNormsFactor) {
  EXPECT_EQ(clip_coefficient(2.0, 1.0), static_cast<float>(1.0 / (2.0 + 1e-6)));
  EXPECT_EQ(clip_coefficient(0.5, 1.0), 1.0f);   // below the threshold
  EXPECT_EQ(clip_coefficient(2.0, 0.0), 1.0f);   // clipping off
  EXPECT_EQ(clip_coefficient(std::numeric_limits<double>::infinity(), 1.0), 1.0f);
  EXPECT_EQ(clip_coefficient(std::nan(""), 1.0), 1.0f);
}

}  // namespace
}  // namespace nanogpt
