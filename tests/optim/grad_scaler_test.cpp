// GradScaler: PyTorch's rules (x2 after 2000 finite steps in a row, x0.5 and a skipped step on
// inf/nan), unscaling in place before clipping, the disabled scaler, and its saved state.
#include "kernels/cpu_backend.h"
#include "optim/grad_scaler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/check.h"
#include "model/model_config.h"
#include "model/params.h"
#include "optim/grad_clip.h"

namespace nanogpt {
namespace {

TEST(GradScaler, GrowsAfter2000FiniteStepsInARow) {
  GradScaler s(true);
  EXPECT_EQ(s.scale(), 65536.0f);
  for (int i = 0; i < 1999; ++i) s.update(false);
  EXPECT_EQ(s.scale(), 65536.0f);
  EXPECT_EQ(s.state().growth_tracker, 1999);
  s.update(false);
  EXPECT_EQ(s.scale(), 131072.0f);
  EXPECT_EQ(s.state().growth_tracker, 0);
  // An overflow resets the count: 2000 more finite steps are needed.
  for (int i = 0; i < 1500; ++i) s.update(false);
  s.update(true);
  EXPECT_EQ(s.scale(), 65536.0f);
  for (int i = 0; i < 1999; ++i) s.update(false);
  EXPECT_EQ(s.scale(), 65536.0f);
  s.update(false);
  EXPECT_EQ(s.scale(), 131072.0f);
  EXPECT_EQ(s.state().skipped_steps, 1);
}

TEST(GradScaler, InfOrNanBacksOffAndCountsASkippedStep) {
  CpuBackend backend;  // the host: the optimizer ops run here
  GradScaler s(true);
  for (float bad : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                    std::numeric_limits<float>::quiet_NaN()}) {
    std::vector<float> g = {1.0f, 2.0f, bad, 4.0f};
    const bool finite = s.unscale(backend, g);
    EXPECT_FALSE(finite) << bad;
    s.update(!finite);
  }
  EXPECT_EQ(s.scale(), 8192.0f);  // 2^16 * 0.5^3
  EXPECT_EQ(s.state().skipped_steps, 3);
  EXPECT_EQ(s.state().growth_tracker, 0);
  // A finite value that overflows only once multiplied is not possible: unscaling divides. But a
  // gradient already at float's max stays finite.
  std::vector<float> g = {3.0e38f};
  EXPECT_TRUE(s.unscale(backend, g));
}

TEST(GradScaler, UnscalesInPlaceBeforeClipping) {
  CpuBackend backend;  // the host: the optimizer ops run here
  ModelConfig c;
  c.n_layer = 1, c.n_head = 2, c.n_embd = 8, c.block_size = 4, c.vocab_size = 11;
  ParamTable table(c);
  std::vector<float> g(static_cast<size_t>(table.total_numel()));
  for (size_t i = 0; i < g.size(); ++i) g[i] = std::sin(0.37f * float(i));
  // The same gradients times the scale (exact: a power of two), then unscaled and clipped, must
  // equal clipping the unscaled gradients: the norm and the clip coefficient see true values.
  GradScaler s(true);
  std::vector<float> scaled(g.size());
  for (size_t i = 0; i < g.size(); ++i) scaled[i] = g[i] * s.scale();
  ASSERT_TRUE(s.unscale(backend, scaled));
  EXPECT_EQ(scaled, g);
  std::vector<float> want = g;
  const double n_want = clip_grad_norm(backend, table, want.data(), 1.0);
  const double n_got = clip_grad_norm(backend, table, scaled.data(), 1.0);
  EXPECT_EQ(n_got, n_want);
  EXPECT_EQ(scaled, want);
  EXPECT_GT(n_want, 1.0);  // clipping did act
}

TEST(GradScaler, DisabledHasScaleOneAndOnlyChecks) {
  CpuBackend backend;  // the host: the optimizer ops run here
  GradScaler s(false);
  EXPECT_EQ(s.scale(), 1.0f);
  std::vector<float> g = {1.5f, -2.0f};
  EXPECT_TRUE(s.unscale(backend, g));
  EXPECT_EQ(g, (std::vector<float>{1.5f, -2.0f}));
  s.update(true);
  EXPECT_EQ(s.state().skipped_steps, 0);
}

TEST(GradScaler, StateRoundTripsThroughJsonAndBadStatesAreNamed) {
  GradScaler s(true);
  s.update(true);
  for (int i = 0; i < 7; ++i) s.update(false);
  GradScaler r(true);
  r.set_state(grad_scaler_state_from_json(s.to_json(), "state.json"));
  EXPECT_EQ(r.state().scale, 32768.0);
  EXPECT_EQ(r.state().growth_tracker, 7);
  EXPECT_EQ(r.state().skipped_steps, 1);
  for (const char* bad : {R"({"scale": -1, "growth_tracker": 0, "skipped_steps": 0})",
                          R"({"scale": 2, "growth_tracker": -3, "skipped_steps": 0})",
                          R"({"scale": 2, "growth_tracker": 0})", R"([1, 2])"}) {
    try {
      grad_scaler_state_from_json(nlohmann::json::parse(bad), "ckpt/state.json grad_scaler");
      ADD_FAILURE() << "accepted " << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("ckpt/state.json grad_scaler"), std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace nanogpt
