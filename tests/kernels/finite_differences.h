// Central finite differences for the tier-2 gradient checks (ref_gradcheck_test.cpp,
// arch_ops_test.cpp): a double-precision copy of an op's forward, differentiated numerically, against
// the ref backward. Test-only.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

namespace nanogpt::testing {

inline std::vector<double> to_d(const std::vector<float>& v) { return {v.begin(), v.end()}; }

inline double dot(const std::vector<double>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// Central differences (step h) of loss() w.r.t. every element of x (perturbed in place and
// restored), compared with grad - g0 (g0: what the gradient buffer held before an accumulating
// backward): |g - fd| <= 1e-5 (1 + |fd|). Reports the first few failures.
inline void check_grad(std::vector<double>& x, const std::function<double()>& loss,
                       const std::vector<float>& grad, const std::string& what, double g0 = 0.0,
                       double h = 1e-3) {
  ASSERT_EQ(x.size(), grad.size()) << what;
  int failures = 0;
  for (size_t i = 0; i < x.size() && failures < 5; ++i) {
    const double x0 = x[i];
    x[i] = x0 + h;
    const double lp = loss();
    x[i] = x0 - h;
    const double lm = loss();
    x[i] = x0;
    const double fd = (lp - lm) / (2 * h);
    const double g = static_cast<double>(grad[i]) - g0;
    if (!(std::fabs(g - fd) <= 1e-5 * (1 + std::fabs(fd)))) {
      ADD_FAILURE() << what << "[" << i << "]: backward " << g << " finite difference " << fd;
      ++failures;
    }
  }
}

}  // namespace nanogpt::testing
