// The attention softmax's 2^x (attention_tiles-inl.h's Exp2) on every CPU target this machine runs,
// against std::exp2 in double: within 1 ulp over the normal range [-126, 127] (the attention tests'
// error models count a 2-ulp exp), exact at integers, tiny and not negative below the range.
// This file is compiled once per target (Highway's foreach_target.h), like the kernels, and for the
// same targets as attention.cpp (fixed_width_targets.h).
#include "kernels/cpu/fixed_width_targets.h"
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/exp2_targets_test.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "kernels/cpu/attention_tiles-inl.h"

HWY_BEFORE_NAMESPACE();
namespace nanogpt::HWY_NAMESPACE {

// y[i] = 2^x[i] by this target's Exp2; n a multiple of 16.
void Exp2Array(const float* x, float* y, size_t n) {
  namespace hn = hwy::HWY_NAMESPACE;
  const cpu::HWY_NAMESPACE::TileTag d;
  for (size_t i = 0; i < n; i += cpu::HWY_NAMESPACE::kTileLanes) {
    hn::StoreU(cpu::HWY_NAMESPACE::attention_v::Exp2(hn::LoadU(d, x + i)), d, y + i);
  }
}

}  // namespace nanogpt::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <gtest/gtest.h>

#include "dispatch_test_util.h"
#include "kernel_test_util.h"

namespace nanogpt {
HWY_EXPORT(Exp2Array);
namespace {

using testing::kEps;  // 2^-23: one ulp at 1

std::vector<float> exp2_of(const std::vector<float>& xs) {
  std::vector<float> ys(xs.size());
  HWY_DYNAMIC_DISPATCH(Exp2Array)(xs.data(), ys.data(), xs.size());
  return ys;
}

double max_relative_error(const std::vector<float>& xs) {
  const std::vector<float> ys = exp2_of(xs);
  double worst = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double want = std::exp2(double(xs[i]));
    worst = std::max(worst, std::fabs(ys[i] - want) / want);
  }
  return worst;
}

// A fine even grid over [-126, 127] plus the points around every integer and half-integer (where
// the reduction to |f| <= 1/2 switches).
TEST(Exp2AllTargets, WithinOneUlpOverTheNormalRange) {
  std::vector<float> xs;
  for (int i = 0; i <= (253 << 12); ++i) xs.push_back(-126.0f + i / 4096.0f);
  for (int n = -252; n <= 254; ++n) {
    const float c = n / 2.0f;
    for (float x = c, k = 0; k < 8; ++k) xs.push_back(x = std::nextafter(x, -200.0f));
    for (float x = c, k = 0; k < 8; ++k) xs.push_back(x = std::nextafter(x, 200.0f));
  }
  // The stated range only: outside it the targets without vscalefps clamp x (below -126 they give
  // 2^-126 instead of a denormal, above 127 2^127 instead of infinity).
  std::erase_if(xs, [](float x) { return x < -126.0f || x > 127.0f; });
  while (xs.size() % 16) xs.push_back(0.0f);
  testing::for_each_target([&](const std::string& target) {
    const double err = max_relative_error(xs);
    EXPECT_LE(err, kEps) << target << ": max relative error " << err / kEps << " ulp";
    EXPECT_GT(err, 0.0) << target;  // an approximation: zero would mean nothing was compared
  });
}

TEST(Exp2AllTargets, ExactAtIntegersAndTinyBelowTheRange) {
  std::vector<float> ints, below;
  for (int k = 0; k < 16; ++k) ints.push_back(-120.0f + 16.0f * k);  // -120 .. 120
  for (int k = 0; k < 16; ++k) below.push_back(-127.0f - 10.0f * k);
  testing::for_each_target([&](const std::string& target) {
    const auto y = exp2_of(ints);
    for (int k = 0; k < 16; ++k) EXPECT_EQ(y[k], std::exp2(ints[k])) << target << " x " << ints[k];
    const auto t = exp2_of(below);
    for (int k = 0; k < 16; ++k) {
      EXPECT_GE(t[k], 0.0f) << target;
      EXPECT_LE(t[k], std::exp2(-126.0f)) << target << " x " << below[k];
    }
  });
}

}  // namespace
}  // namespace nanogpt
#endif  // HWY_ONCE
