// Tests of temperature / top-k / top-p token selection.
#include "sample/token_sampler.h"

#include <gtest/gtest.h>

#include <map>
#include <vector>

namespace nanogpt {
namespace {

TEST(TokenSampler, GreedyAtZeroTemperature) {
  std::vector<float> logits = {0.1f, 3.0f, 2.0f, -1.0f};
  TokenSampler s({0.0, 0, 1.0});
  Rng rng(1);
  EXPECT_EQ(s.sample(logits.data(), 4, rng), 1);
}

TEST(TokenSampler, TopKOneIsGreedyAndPaddingIsNeverChosen) {
  std::vector<float> logits = {0.1f, 3.0f, 2.0f, 99.0f};  // index 3 is padding: V = 3
  TokenSampler s({1.0, 1, 1.0});
  Rng rng(2);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(s.sample(logits.data(), 3, rng), 1);
}

TEST(TokenSampler, FrequenciesFollowSoftmax) {
  std::vector<float> logits = {0.0f, std::log(3.0f)};  // probabilities 1/4, 3/4
  TokenSampler s({1.0, 0, 1.0});
  Rng rng(3);
  int ones = 0, n = 20000;
  for (int i = 0; i < n; ++i) ones += s.sample(logits.data(), 2, rng);
  EXPECT_NEAR(static_cast<double>(ones) / n, 0.75, 0.02);
}

TEST(TokenSampler, TopPKeepsTheNucleus) {
  // probabilities ~ 0.5, 0.3, 0.2: top_p 0.6 keeps the first two only.
  std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.2f)};
  TokenSampler s({1.0, 0, 0.6});
  Rng rng(4);
  std::map<int, int> seen;
  for (int i = 0; i < 5000; ++i) seen[s.sample(logits.data(), 3, rng)]++;
  EXPECT_EQ(seen.count(2), 0u);
  EXPECT_NEAR(seen[0] / 5000.0, 0.5 / 0.8, 0.03);
}

TEST(TokenSampler, SameSeedSameDraws) {
  std::vector<float> logits = {0.5f, 0.4f, 0.3f, 0.2f, 0.1f};
  TokenSampler a({0.9, 3, 0.95}), b({0.9, 3, 0.95});
  Rng ra(7), rb(7);
  for (int i = 0; i < 100; ++i)
    EXPECT_EQ(a.sample(logits.data(), 5, ra), b.sample(logits.data(), 5, rb));
}

}  // namespace
}  // namespace nanogpt
