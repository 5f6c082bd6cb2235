// The warmup-stable-decay schedule (lr_schedule 'wsd'): values at the phase boundaries and inside
// each phase against hand-computed numbers, for both cooldown shapes, and the errors of its keys.
#include <gtest/gtest.h>

#include <string>

#include "core/check.h"
#include "optim/lr_schedule.h"
#include "optim_fixture.h"

namespace nanogpt {
namespace {

// lr 1.0 -> min 0.2, warmup 10, decay ends at 110, cooldown over the last 20% (22 iterations):
// the cooldown starts at 0.8 * 110 = 88.
OptimConfig wsd_config(const std::string& cooldown) {
  OptimConfig c;
  c.learning_rate = 1.0;
  c.min_lr = 0.2;
  c.warmup_iters = 10;
  c.lr_decay_iters = 110;
  c.lr_schedule = "wsd";
  c.cooldown_fraction = 0.2;
  c.cooldown = cooldown;
  return c;
}

TEST(WsdSchedule, WarmupIsNanoGptsLinearWarmup) {
  const OptimConfig c = wsd_config("linear");
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 0), 1.0 / 11);
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 4), 5.0 / 11);
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 9), 10.0 / 11);
}

TEST(WsdSchedule, StableAtLearningRateUntilTheCooldown) {
  for (const char* shape : {"linear", "1-sqrt"}) {
    const OptimConfig c = wsd_config(shape);
    EXPECT_DOUBLE_EQ(learning_rate_at(c, 10), 1.0) << shape;
    EXPECT_DOUBLE_EQ(learning_rate_at(c, 50), 1.0) << shape;
    EXPECT_DOUBLE_EQ(learning_rate_at(c, 87), 1.0) << shape;
    EXPECT_DOUBLE_EQ(learning_rate_at(c, 88), 1.0) << shape;  // progress 0
  }
}

TEST(WsdSchedule, LinearCooldownIsTheTrapezoid) {
  const OptimConfig c = wsd_config("linear");
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 99), 0.6);             // progress 11/22 = 0.5
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 104), 1.0 - 0.8 * 16.0 / 22);  // progress 16/22
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 110), 0.2);            // progress 1
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 111), 0.2);            // past the end: min_lr
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 100000), 0.2);
}

TEST(WsdSchedule, OneMinusSqrtCooldown) {
  const OptimConfig c = wsd_config("1-sqrt");
  // progress 0.5: 0.2 + 0.8 * (1 - 0.70710678118654752) by hand
  EXPECT_NEAR(learning_rate_at(c, 99), 0.43431457505076198, 1e-15);
  // progress 16/22: sqrt(8/11) = 0.8528028654224418, 0.2 + 0.8 * 0.1471971345775582
  EXPECT_NEAR(learning_rate_at(c, 104), 0.31775770766204656, 1e-15);
  // the end: sqrt(1) = 1 gives min_lr exactly
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 110), 0.2);
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 120), 0.2);
  // Below the linear form inside the cooldown (1 - sqrt(p) < 1 - p for 0 < p < 1).
  for (int it = 89; it < 110; ++it) {
    EXPECT_LT(learning_rate_at(c, it), learning_rate_at(wsd_config("linear"), it)) << it;
  }
}

TEST(WsdSchedule, CooldownNeverStartsInsideWarmup) {
  OptimConfig c = wsd_config("linear");
  c.cooldown_fraction = 1.0;  // whole span: from the end of warmup (10) to 110, as 'linear'
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 9), 10.0 / 11);
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 10), 1.0);
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 60), 0.6);
  c.cooldown_fraction = 0.95;  // (1 - 0.95) * 110 = 5.5 < warmup: starts at 10 too
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 60), 0.6);
  c.warmup_iters = 110;  // cooldown span 0: min_lr from the end of warmup on
  EXPECT_DOUBLE_EQ(learning_rate_at(c, 110), 0.2);
}

using testing::expect_invalid;

TEST(WsdSchedule, KeysAreValidated) {
  OptimConfig ok = wsd_config("1-sqrt");
  EXPECT_NO_THROW(ok.validate());
  OptimConfig c = ok;
  c.cooldown_fraction = 0.0;
  expect_invalid(c, "cooldown_fraction = 0: expected a fraction of lr_decay_iters with 0 < f <= 1");
  c.cooldown_fraction = 1.5;
  expect_invalid(c, "cooldown_fraction = 1.5");
  c.cooldown_fraction = -0.1;
  expect_invalid(c, "cooldown_fraction = -0.1");
  c = ok;
  c.cooldown = "sqrt";
  expect_invalid(c, "cooldown = 'sqrt': expected 'linear' or '1-sqrt'");
  c = ok;
  c.lr_schedule = "trapezoid";
  expect_invalid(c, "lr_schedule = 'trapezoid': expected 'cosine', 'linear', 'constant' or 'wsd'");
  c = ok;
  c.lr_decay_iters = 5;  // ends before warmup does
  expect_invalid(c, "lr_decay_iters = 5 is less than warmup_iters = 10");
}

}  // namespace
}  // namespace nanogpt
