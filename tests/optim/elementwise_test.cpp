// The optimizers' dispatched element loops (kernels/cpu/optim_elementwise.h) against plain scalar loops, on
// every CPU target this machine can run, on lengths with vector tails: SGD with and without
// momentum, the sum of squares, scaling, and the unscale-and-check's finiteness verdict.
#include "kernels/cpu/optim_elementwise.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/rng.h"
#include "kernels/dispatch_test_util.h"

namespace nanogpt {
namespace {

std::vector<float> random_values(int64_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(rng.uniform() * 4.0 - 2.0);
  return v;
}

// Within a few float roundings of the scalar value (FMA contraction differs between targets).
void expect_close(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], 4e-7 * (std::fabs(want[i]) + 1.0f)) << what << " at " << i;
  }
}

TEST(OptimElementwise, MatchesScalarLoopsOnEveryTarget) {
  for (const int64_t n : {int64_t{1}, int64_t{15}, int64_t{67}, int64_t{1000}}) {
    const auto p0 = random_values(n, 1), g = random_values(n, 2), b0 = random_values(n, 3);
    const float lr = 0.1f, wd = 0.01f, mu = 0.9f, unscale = 0.5f;
    std::vector<float> p_m = p0, b_m = b0, p_p = p0;
    double ss = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      const float d = g[i] + wd * p0[i];
      b_m[i] = b0[i] * mu + d;
      p_m[i] = p0[i] - lr * b_m[i];
      p_p[i] = p0[i] - lr * (g[i] + wd * p0[i]);
      const float v = g[i] * unscale;
      ss += static_cast<double>(v) * v;
    }
    testing::for_each_target([&](const std::string&) {
      SCOPED_TRACE(n);
      auto p = p0, b = b0;
      optim_loops::sgd_momentum(p.data(), g.data(), b.data(), n, lr, wd, mu);
      expect_close(b, b_m, "momentum buffer");
      expect_close(p, p_m, "sgd with momentum");
      p = p0;
      optim_loops::sgd_plain(p.data(), g.data(), n, lr, wd);
      expect_close(p, p_p, "sgd");
      EXPECT_NEAR(optim_loops::sum_of_squares(g.data(), n, unscale), ss, 1e-12 * ss);
      auto s = g;
      optim_loops::scale(s.data(), n, 0.25f);
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(s[i], g[i] * 0.25f);
      s = g;
      EXPECT_TRUE(optim_loops::scale_and_check_finite(s.data(), n, 0.5f));
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(s[i], g[i] * 0.5f);
      for (const float bad : {std::numeric_limits<float>::infinity(),
                              std::numeric_limits<float>::quiet_NaN(), 3e38f}) {
        s = g;
        s[n - 1] = bad;  // the last element: in the tail on every target
        EXPECT_FALSE(optim_loops::scale_and_check_finite(s.data(), n, bad == 3e38f ? 4.0f : 1.0f))
            << bad;
      }
    });
  }
}

}  // namespace
}  // namespace nanogpt
