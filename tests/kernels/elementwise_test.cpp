// cpu vs ref for the element-wise and gather ops: encoder, residual, dropout, GELU (both kinds),
// forward and accumulating backward (gradients pre-filled with nonzero values).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numbers>

#include "dispatch_test_util.h"
#include "kernel_test_util.h"
#include "kernels/ops.h"
#include "kernels/ops_lowp.h"

namespace nanogpt {
namespace {

using testing::expect_within;
using testing::kEps;
using testing::random_normal;

TEST(EncoderTest, MatchesReferenceWithRepeatedTokens) {
  const int B = 3, T = 7, C = 48, V = 5;  // V small: tokens repeat, the scatter-add must sum
  std::vector<int> inp(B * T);
  for (int i = 0; i < B * T; ++i) inp[i] = (i * 7 + 3) % V;
  const auto wte = random_normal(V * C, 1), wpe = random_normal(T * C, 2);
  std::vector<float> out(B * T * C), want(B * T * C);
  cpu::encoder_forward(out.data(), inp.data(), wte.data(), wpe.data(), B, T, C);
  ref::encoder_forward(want.data(), inp.data(), wte.data(), wpe.data(), B, T, C);
  expect_within(out, want, 0.0, "out");  // one float add: bit-identical

  const auto dout = random_normal(B * T * C, 3);
  auto dwte = random_normal(V * C, 4), dwpe = random_normal(T * C, 5);
  auto dwte_r = dwte, dwpe_r = dwpe;
  cpu::encoder_backward(dwte.data(), dwpe.data(), dout.data(), inp.data(), B, T, C);
  ref::encoder_backward(dwte_r.data(), dwpe_r.data(), dout.data(), inp.data(), B, T, C);
  // Same additions in the same (b, t) order per element: bit-identical.
  expect_within(dwte, dwte_r, 0.0, "dwte");
  expect_within(dwpe, dwpe_r, 0.0, "dwpe");
}

TEST(ResidualTest, MatchesReference) {
  const int64_t N = 1001;
  const auto a = random_normal(N, 1), b = random_normal(N, 2), dout = random_normal(N, 3);
  std::vector<float> out(N), want(N);
  cpu::residual_forward(out.data(), a.data(), b.data(), N);
  ref::residual_forward(want.data(), a.data(), b.data(), N);
  expect_within(out, want, 0.0, "out");
  auto da = random_normal(N, 4), db = random_normal(N, 5);
  auto da_r = da, db_r = db;
  cpu::residual_backward(da.data(), db.data(), dout.data(), N);
  ref::residual_backward(da_r.data(), db_r.data(), dout.data(), N);
  expect_within(da, da_r, 0.0, "da");
  expect_within(db, db_r, 0.0, "db");
}

class DropoutTest : public ::testing::TestWithParam<float> {};

TEST_P(DropoutTest, MatchesReferenceAndDropsAboutP) {
  const float p = GetParam();
  const int64_t N = 4099;
  const uint64_t seed = 1234;
  const auto x = random_normal(N, 1), dout = random_normal(N, 2);
  std::vector<float> out(N), want(N);
  cpu::dropout_forward(out.data(), x.data(), N, p, seed);
  ref::dropout_forward(want.data(), x.data(), N, p, seed);
  expect_within(out, want, 0.0, "out");  // same mask, one multiply
  int64_t dropped = 0;
  for (float v : out) dropped += v == 0.0f;
  // Binomial(N, p): 5 standard deviations.
  EXPECT_NEAR(static_cast<double>(dropped) / N, p, 5 * std::sqrt(p * (1 - p) / N) + 1e-9);
  const auto dinp0 = random_normal(N, 3);
  auto dinp_r = dinp0;
  ref::dropout_backward(dinp_r.data(), dout.data(), N, p, seed);
  // dinp + dout * keep: one rounding apart where a target fuses the multiply-add and the
  // reference does not (or the other way round).
  const double scale = p > 0 ? 1.0 / (1.0 - p) : 1.0;
  std::vector<double> tol(N);
  for (int64_t i = 0; i < N; ++i) {
    tol[i] = testing::kEps * (std::fabs(dinp_r[i]) + std::fabs(dout[i]) * scale);
  }
  testing::for_each_target([&](const std::string&) {
    auto dinp = dinp0;
    cpu::dropout_backward(dinp.data(), dout.data(), N, p, seed);
    expect_within(dinp, dinp_r, tol, "dinp");
    // Overwriting: the bits of a zeroed dinp accumulated into (signed zeros too), dinp unread.
    std::vector<float> zeroed(N, 0.0f), overwritten(N, std::nanf(""));
    cpu::dropout_backward(zeroed.data(), dout.data(), N, p, seed);
    cpu::dropout_backward_overwrite(overwritten.data(), dout.data(), N, p, seed);
    EXPECT_EQ(std::memcmp(zeroed.data(), overwritten.data(), N * sizeof(float)), 0);
  });
}

INSTANTIATE_TEST_SUITE_P(Rates, DropoutTest, ::testing::Values(0.0f, 0.1f, 0.5f));

class GeluTest : public ::testing::TestWithParam<MlpActivation> {};

// On every CPU target this machine runs (the kernel is dispatched; testing::for_each_target).
TEST_P(GeluTest, MatchesReferenceOnEveryTarget) {
  testing::for_each_target([&](const std::string&) {
    const MlpActivation kind = GetParam();
    const int64_t N = 3001;
    auto x = random_normal(N, 1, 3.0f);  // covers the tails
    x[0] = 0.0f;
    x[1] = 12.0f;
    x[2] = -12.0f;
    const auto dout = random_normal(N, 2);
    std::vector<float> out(N), want(N);
    cpu::gelu_forward(out.data(), x.data(), N, kind);
    ref::gelu_forward(want.data(), x.data(), N, kind);
    auto dinp = random_normal(N, 3);
    const auto dinp0 = dinp;
    auto dinp_r = dinp;
    cpu::gelu_backward(dinp.data(), x.data(), dout.data(), N, kind);
    ref::gelu_backward(dinp_r.data(), x.data(), dout.data(), N, kind);
    // Error model. The fast kernels evaluate tanh as 1 - 2/(1 + e^{2u}) with a 2-ulp exp, so
    // |tanh err| <= ~4 eps; erf is Abramowitz-Stegun 7.1.26, |erf err| <= 1.5e-7 (+ ~4 eps of
    // rounding). GELU = 0.5 x (1 + f) so forward |err| <= 0.5 |x| e_f + 4 eps |ref| (the cubic
    // argument and the products). Backward g' = 0.5 (1 + f) + (x-dependent) f' term: the error in f
    // enters with weight <= 0.5 + |x| s (1 + 3c x^2) for tanh, 0.5 for erf (the Gaussian term adds
    // 4 eps |x| phi(x) <= 4 eps); then times |dout| plus rounding of the accumulation 2 eps
    // |result|.
    const double e_f = kind == MlpActivation::kTanh ? 4 * kEps : 1.5e-7 + 4 * kEps;
    std::vector<double> tol_f(N), tol_b(N);
    for (int64_t i = 0; i < N; ++i) {
      const double ax = std::fabs(x[i]);
      tol_f[i] = 0.5 * ax * e_f + 4 * kEps * std::fabs(want[i]) + 1e-30;
      const double w =
          kind == MlpActivation::kTanh ? 0.5 + ax * 0.7978845608 * (1 + 3 * 0.044715 * ax * ax) : 0.5;
      tol_b[i] = std::fabs(dout[i]) * (w * e_f + 4 * kEps * (1 + ax)) +
                 2 * kEps * (std::fabs(dinp_r[i]) + std::fabs(dinp0[i])) + 1e-30;
    }
    expect_within(out, want, tol_f, "gelu out");
    expect_within(dinp, dinp_r, tol_b, "gelu dinp");

    // Overwriting (NaN before) gives the accumulation into zeros, bit for bit.
    std::vector<float> dinp_set(N, NAN), dinp_zero(N, 0.0f);
    cpu::gelu_backward_overwrite(dinp_set.data(), x.data(), dout.data(), N, kind);
    cpu::gelu_backward(dinp_zero.data(), x.data(), dout.data(), N, kind);
    EXPECT_EQ(dinp_set, dinp_zero) << "gelu dinp overwritten";
  });
}

INSTANTIATE_TEST_SUITE_P(Kinds, GeluTest, ::testing::Values(MlpActivation::kTanh, MlpActivation::kExact));

}  // namespace
}  // namespace nanogpt
