// WeightEma: the average's arithmetic against a double-precision recurrence (started at the step
// before ema_from, or at the initial weights with ema_from 0), nothing before it, the swap into the
// weights for an evaluation and back, and the resume checks that name the keys.
#include "kernels/cpu_backend.h"
#include "train/weight_ema.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/check.h"

namespace nanogpt {
namespace {

// Weights of step k: element i is sin(0.1 k + i) (n elements, more than one thread's pass).
std::vector<float> weights_at(int64_t k, int64_t n) {
  std::vector<float> w(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) w[static_cast<size_t>(i)] = std::sin(0.1f * k + float(i));
  return w;
}

TEST(WeightEma, FollowsTheRecurrenceFromTheStepBeforeItsStart) {
  CpuBackend backend;  // the host: the optimizer ops run here
  const int64_t n = 70000;
  const double decay = 0.9;
  WeightEma ema(backend, decay, /*from=*/5, n, nullptr);
  ASSERT_TRUE(ema.enabled());
  std::vector<double> want(static_cast<size_t>(n));
  for (int64_t k = 0; k < 12; ++k) {
    const std::vector<float> w = weights_at(k, n);
    ema.after_step(w.data(), k);
    EXPECT_EQ(ema.active(), k >= 4) << k;
    for (int64_t i = 0; i < n; ++i) {
      double& a = want[static_cast<size_t>(i)];
      if (k == 4) a = w[static_cast<size_t>(i)];
      if (k > 4) a = decay * a + (1 - decay) * w[static_cast<size_t>(i)];
    }
  }
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) worst = std::max(worst, std::abs(ema.data()[i] - want[i]));
  EXPECT_LT(worst, 1e-6);
}

TEST(WeightEma, FromZeroStartsAtTheInitialWeights) {
  CpuBackend backend;  // the host: the optimizer ops run here
  const int64_t n = 40;
  WeightEma ema(backend, 0.5, 0, n, nullptr);
  const std::vector<float> w0 = weights_at(0, n), w1 = weights_at(1, n);
  EXPECT_FALSE(ema.active());
  ema.start(w0.data());
  EXPECT_TRUE(ema.active());
  ema.after_step(w1.data(), 0);
  for (int64_t i = 0; i < n; ++i) EXPECT_FLOAT_EQ(ema.data()[i], 0.5f * w0[i] + 0.5f * w1[i]);
}

TEST(WeightEma, EvaluationsSeeTheAverageAndTheWeightsComeBack) {
  CpuBackend backend;  // the host: the optimizer ops run here
  const int64_t n = 33;
  WeightEma ema(backend, 0.9, 3, n, nullptr);
  std::vector<float> w = weights_at(7, n);
  const std::vector<float> trained = w;
  {
    const EvaluateOnAverage before_start(
        ema, [&] { return std::span<float>(w); });  // not active yet: nothing swapped
    EXPECT_EQ(w, trained);
  }
  ema.after_step(weights_at(2, n).data(), 2);  // the average starts here
  const std::vector<float> average(ema.data(), ema.data() + n);
  {
    const EvaluateOnAverage on_average(ema, [&] { return std::span<float>(w); });
    EXPECT_EQ(w, average);
    EXPECT_EQ(std::vector<float>(ema.data(), ema.data() + n), trained);
  }
  EXPECT_EQ(w, trained);
  EXPECT_EQ(std::vector<float>(ema.data(), ema.data() + n), average);
  WeightEma off;
  EXPECT_FALSE(off.enabled());
  off.after_step(w.data(), 0);
  const EvaluateOnAverage nothing(off, [&]() -> std::span<float> {
    ADD_FAILURE() << "weights asked for without an average";
    return w;
  });
  EXPECT_EQ(w, trained);
}

std::string restore_error(WeightEma& ema, const nlohmann::json& state) {
  try {
    ema.restore(state, "ck/state.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(WeightEma, ResumeKeepsTheStateAndRefusesOtherKeysNamingTheFix) {
  CpuBackend backend;  // the host: the optimizer ops run here
  WeightEma ema(backend, 0.9, 100, 8, nullptr);
  EXPECT_EQ(restore_error(ema, {{"decay", 0.9}, {"from", 100}, {"active", true}}), "");
  EXPECT_TRUE(ema.active());
  EXPECT_EQ(ema.to_json(), (nlohmann::json{{"decay", 0.9}, {"from", 100}, {"active", true}}));
  const std::string other = restore_error(ema, {{"decay", 0.95}, {"from", 100}, {"active", true}});
  EXPECT_NE(other.find("ck/state.json"), std::string::npos) << other;
  EXPECT_NE(other.find("--ema_decay=0.95 --ema_from=100"), std::string::npos) << other;
  const std::string none = restore_error(ema, nlohmann::json());
  EXPECT_NE(none.find("trained with ema_decay = 0"), std::string::npos) << none;
  WeightEma off;
  const std::string had = restore_error(off, {{"decay", 0.9}, {"from", 100}, {"active", true}});
  EXPECT_NE(had.find("--ema_decay=0.9 --ema_from=100"), std::string::npos) << had;
  EXPECT_EQ(restore_error(off, nlohmann::json()), "");
  const std::string damaged = restore_error(ema, {{"decay", 0.9}, {"from", "x"}});
  EXPECT_NE(damaged.find("ck/state.json: \"ema\" must hold"), std::string::npos) << damaged;
  EXPECT_THROW(WeightEma(backend, 1.0, 0, 8, nullptr), Error);
  EXPECT_THROW(WeightEma(backend, 0.5, -1, 8, nullptr), Error);
}

}  // namespace
}  // namespace nanogpt
