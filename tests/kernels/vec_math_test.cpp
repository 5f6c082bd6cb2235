// The vectorizable float math of kernels/cpu/vec_math.h against libm in double: the relative
// error each function states, over the whole range the kernels use (the attention softmax's
// vector 2^x is tested per target in exp2_targets_test.cpp).
#include "kernels/cpu/vec_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernel_test_util.h"

namespace nanogpt {
namespace {

using testing::kEps;  // 2^-23: one ulp at 1

// fast_exp (GELU's tanh, cross-entropy, the backward's dropout path) within its stated 2 ulp where
// the target has FMA, 2.1 ulp where it has not (this file is compiled for the build's target: the
// baseline in the portable build; the kernels compile it per CPU target).
TEST(VecMath, FastExpWithinTwoUlp) {
  double worst = 0;
  for (int i = 0; i <= (1 << 20); ++i) {
    const float x = -87.0f + 175.0f * i / (1 << 20);
    const double want = std::exp(double(x));
    worst = std::max(worst, std::fabs(cpu::fast_exp(x) - want) / want);
  }
#ifdef __FMA__
  const double bound = 2.0 * kEps;
#else
  const double bound = 2.1 * kEps;
#endif
  EXPECT_LE(worst, bound) << "max relative error " << worst / kEps << " ulp";
}

}  // namespace
}  // namespace nanogpt
