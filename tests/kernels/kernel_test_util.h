// Shared helpers for the kernel tests: seeded random tensors and an element-wise comparison against
// a per-element tolerance (each test derives its tolerance from precision and reduction length).
#pragma once

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/rng.h"

namespace nanogpt::testing {

inline constexpr double kEps = std::numeric_limits<float>::epsilon();  // 2^-23

// Sets OpenMP's thread count for a test and restores the caller's when it goes out of scope, also
// when an ASSERT leaves the test early (so later tests keep their thread count).
class ScopedOmpThreads {
 public:
  ScopedOmpThreads() : saved_(omp_get_max_threads()) {}
  explicit ScopedOmpThreads(int threads) : ScopedOmpThreads() { set(threads); }
  ~ScopedOmpThreads() { omp_set_num_threads(saved_); }
  ScopedOmpThreads(const ScopedOmpThreads&) = delete;
  ScopedOmpThreads& operator=(const ScopedOmpThreads&) = delete;
  void set(int threads) const { omp_set_num_threads(threads); }

 private:
  int saved_;
};

inline std::vector<float> random_normal(size_t n, uint64_t seed, float stddev = 1.0f) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = stddev * rng.normal();
  return v;
}

inline std::vector<float> random_uniform(size_t n, uint64_t seed, float lo, float hi) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = lo + (hi - lo) * rng.uniform();
  return v;
}

inline std::vector<float> abs_of(const std::vector<float>& v) {
  std::vector<float> a(v.size());
  for (size_t i = 0; i < v.size(); ++i) a[i] = std::fabs(v[i]);
  return a;
}

// Tolerance for a float dot product of length K against an (almost) exact double reference:
// any summation order has |err| <= K * eps * sum|a_i b_i| (worst case), and blocked/pairwise
// orders (oneDNN's) or one FMA chain of random signs stay near sqrt(K) * eps * sum|a_i b_i|; we
// allow 4 sqrt(K) eps, plus one rounding of the reference output and of the accumulated value
// (2 eps |ref|). mag[i] = sum|a_i b_i| of output i.
inline std::vector<double> dot_tolerance(const std::vector<float>& mag,
                                         const std::vector<float>& ref, int64_t K) {
  std::vector<double> tol(mag.size());
  for (size_t i = 0; i < mag.size(); ++i) {
    tol[i] = 4.0 * std::sqrt(static_cast<double>(K)) * kEps * mag[i] +
             2.0 * kEps * std::fabs(ref[i]) + 1e-30;
  }
  return tol;
}

// Every |got[i] - want[i]| <= tol[i]; reports the first few failures with their index.
inline void expect_within(const std::vector<float>& got, const std::vector<float>& want,
                          const std::vector<double>& tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  ASSERT_EQ(got.size(), tol.size()) << what;
  int failures = 0;
  for (size_t i = 0; i < got.size() && failures < 5; ++i) {
    const double err = std::fabs(static_cast<double>(got[i]) - want[i]);
    if (!(err <= tol[i])) {  // also catches NaN
      ADD_FAILURE() << what << "[" << i << "]: got " << got[i] << " want " << want[i] << " err "
                    << err << " > tol " << tol[i];
      ++failures;
    }
  }
}

// Same with one tolerance for every element.
inline void expect_within(const std::vector<float>& got, const std::vector<float>& want, double tol,
                          const std::string& what) {
  expect_within(got, want, std::vector<double>(got.size(), tol), what);
}

}  // namespace nanogpt::testing
