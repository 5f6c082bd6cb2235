// cpu vs ref softmax cross-entropy: per-row losses, the fused overwrite of dlogits (also in place),
// ignore_index -1, padded vocab (Vp > V) whose columns never win and get zero gradient.
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "core/check.h"
#include "dispatch_test_util.h"
#include "kernel_test_util.h"
#include "kernels/ops.h"

namespace nanogpt {
namespace {

using testing::expect_within;
using testing::kEps;
using testing::random_normal;

class CrossEntropyTest : public ::testing::TestWithParam<std::tuple<int, int, int>> {};

TEST_P(CrossEntropyTest, MatchesReferenceOnEveryTarget) {
  const auto [N, V, Vp] = GetParam();
  auto logits = random_normal(size_t(N) * Vp, 1, 3.0f);
  for (int n = 0; n < N; ++n) {
    for (int v = V; v < Vp; ++v) logits[size_t(n) * Vp + v] = 1e4f;  // padding must never win
  }
  std::vector<int> targets(N);
  for (int n = 0; n < N; ++n) targets[n] = n % 5 == 2 ? -1 : (n * 31 + 7) % V;
  const float dloss = 1.0f / N;

  // On every CPU target this machine runs (the kernel is dispatched).
  testing::for_each_target([&](const std::string&) {
    std::vector<float> loss(N), loss_r(N);
    cpu::crossentropy_forward(loss.data(), logits.data(), targets.data(), N, V, Vp);
    ref::crossentropy_forward(loss_r.data(), logits.data(), targets.data(), N, V, Vp);
    std::vector<float> loss2(N), loss2_r(N), dl(logits.size(), 7.0f), dl_r(logits.size());
    cpu::crossentropy_forward_backward(loss2.data(), dl.data(), logits.data(), targets.data(),
                                       dloss, N, V, Vp);
    ref::crossentropy_forward_backward(loss2_r.data(), dl_r.data(), logits.data(), targets.data(),
                                       dloss, N, V, Vp);
    auto inplace = logits;  // dlogits aliasing logits
    std::vector<float> loss3(N);
    cpu::crossentropy_forward_backward(loss3.data(), inplace.data(), inplace.data(), targets.data(),
                                       dloss, N, V, Vp);

    // lse = m + log(sum e^{x-m}): the sum of V terms each with 2-ulp exp error and float summation
    // error <= ~sqrt(V) eps relative (vector partial sums), so |d lse| <= 4 (sqrt(V) + 2) eps plus
    // the roundings of m + log(s) and lse - x_y: 2 eps (|lse| + |x_y|). Probabilities
    // p = e^{x - lse} carry relative error |d lse| + eps |x - lse| + 2 eps.
    std::vector<double> tol_loss(N), tol_d(logits.size(), 0.0);
    for (int n = 0; n < N; ++n) {
      const float* x = logits.data() + size_t(n) * Vp;
      double m = x[0];
      for (int v = 1; v < V; ++v) m = std::max(m, double(x[v]));
      double s = 0;
      for (int v = 0; v < V; ++v) s += std::exp(x[v] - m);
      const double lse = m + std::log(s);
      const double dlse = 4 * (std::sqrt(double(V)) + 2) * kEps + 2 * kEps * std::fabs(lse);
      const int y = targets[n];
      tol_loss[n] = y < 0 ? 0.0 : dlse + 2 * kEps * std::fabs(x[y]);
      if (y < 0) continue;
      for (int v = 0; v < V; ++v) {
        const double p = std::exp(x[v] - lse);
        tol_d[size_t(n) * Vp + v] =
            dloss * (p * (dlse + kEps * std::fabs(x[v] - lse) + 2 * kEps) + 2 * kEps) + 1e-30;
      }
    }
    expect_within(loss, loss_r, tol_loss, "losses");
    expect_within(loss2, loss2_r, tol_loss, "losses (fused)");
    expect_within(loss3, loss2_r, tol_loss, "losses (in place)");
    expect_within(dl, dl_r, tol_d, "dlogits");
    expect_within(inplace, dl_r, tol_d, "dlogits (in place)");
    for (int n = 0; n < N; ++n) {
      for (int v = V; v < Vp; ++v)
        ASSERT_EQ(dl[size_t(n) * Vp + v], 0.0f) << "padding gets no grad";
      if (targets[n] < 0) {
        ASSERT_EQ(loss2[n], 0.0f);
        for (int v = 0; v < Vp; ++v) ASSERT_EQ(dl[size_t(n) * Vp + v], 0.0f) << "ignored row";
      }
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Shapes, CrossEntropyTest,
                         ::testing::Values(std::make_tuple(1, 65, 65), std::make_tuple(17, 65, 80),
                                           std::make_tuple(8, 1000, 1024),
                                           std::make_tuple(3, 50257, 50304)));

TEST(CrossEntropyTest, RejectsTargetOutsideVocab) {
  const std::vector<float> logits(2 * 16, 0.0f);
  std::vector<float> loss(2);
  const std::vector<int> targets{3, 13};  // 13 >= V = 10 (a padded column)
  EXPECT_THROW(cpu::crossentropy_forward(loss.data(), logits.data(), targets.data(), 2, 10, 16),
               Error);
  EXPECT_THROW(ref::crossentropy_forward(loss.data(), logits.data(), targets.data(), 2, 10, 16),
               Error);
}

}  // namespace
}  // namespace nanogpt
