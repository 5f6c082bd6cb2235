// The vectorizable float math of kernels/cpu/vec_math.h against libm in double: the relative
// error each function states (the attention tests' error models count a 2-ulp exp, so either
// function is within them), over the
// whole range the kernels use, and the behaviour at the ends of that range.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/cpu/vec_math.h"

namespace nanogpt {
namespace {

using testing::kEps;  // 2^-23: one ulp at 1

// Largest relative error of exp2_16 over xs (evaluated 16 at a time) against std::exp2 in double.
double max_exp2_error(const std::vector<float>& xs) {
  double worst = 0;
  for (size_t i = 0; i + 16 <= xs.size(); i += 16) {
    cpu::Vec16 x;
    for (int k = 0; k < 16; ++k) x[k] = xs[i + k];
    const cpu::Vec16 y = cpu::exp2_16(x);
    for (int k = 0; k < 16; ++k) {
      const double want = std::exp2(double(x[k]));
      worst = std::max(worst, std::fabs(y[k] - want) / want);
    }
  }
  return worst;
}

// exp2_16 over [-126, 127] (normal results): a fine even grid plus the points around every integer
// and half-integer (where the reduction to |f| <= 1/2 switches), within the stated 1 ulp.
TEST(VecMath, Exp2WithinOneUlpOverNormalRange) {
  std::vector<float> xs;
  for (int i = 0; i <= (253 << 12); ++i) xs.push_back(-126.0f + i / 4096.0f);
  for (int n = -252; n <= 254; ++n) {
    const float c = n / 2.0f;
    for (float x = c, k = 0; k < 8; ++k) xs.push_back(x = std::nextafter(x, -200.0f));
    for (float x = c, k = 0; k < 8; ++k) xs.push_back(x = std::nextafter(x, 200.0f));
  }
  while (xs.size() % 16) xs.push_back(0.0f);
  const double err = max_exp2_error(xs);
  EXPECT_LE(err, kEps) << "max relative error " << err / kEps << " ulp";
  EXPECT_GT(err, 0.0);  // it is an approximation: a zero would mean the check compared nothing
}

// The range attention uses most: scaled scores minus the row max, about [-40, 12], densely.
TEST(VecMath, Exp2WithinOneUlpWhereSoftmaxEvaluatesIt) {
  std::vector<float> xs;
  for (int i = 0; i < (1 << 20); ++i) xs.push_back(-40.0f + 52.0f * i / (1 << 20));
  EXPECT_LE(max_exp2_error(xs), kEps);
}

// Exact at integers (powers of two); below the normal range the result is tiny and not negative
// (the softmax masks what must be exactly zero itself).
TEST(VecMath, Exp2ExactAtIntegersAndTinyBelowRange) {
  cpu::Vec16 x;
  for (int k = 0; k < 16; ++k) x[k] = -120.0f + 16.0f * k;  // -120 .. 120
  cpu::Vec16 y = cpu::exp2_16(x);
  for (int k = 0; k < 16; ++k) EXPECT_EQ(y[k], std::exp2(x[k])) << "x " << x[k];
  for (int k = 0; k < 16; ++k) x[k] = -127.0f - 10.0f * k;
  y = cpu::exp2_16(x);
  for (int k = 0; k < 16; ++k) {
    EXPECT_GE(y[k], 0.0f);
    EXPECT_LE(y[k], std::exp2(-126.0f)) << "x " << x[k];
  }
}

// fast_exp (GELU's tanh, cross-entropy, the backward's dropout path) within its stated 2 ulp.
TEST(VecMath, FastExpWithinTwoUlp) {
  double worst = 0;
  for (int i = 0; i <= (1 << 20); ++i) {
    const float x = -87.0f + 175.0f * i / (1 << 20);
    const double want = std::exp(double(x));
    worst = std::max(worst, std::fabs(cpu::fast_exp(x) - want) / want);
  }
  EXPECT_LE(worst, 2 * kEps) << "max relative error " << worst / kEps << " ulp";
}

}  // namespace
}  // namespace nanogpt
