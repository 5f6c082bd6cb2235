// cpu::layernorm vs ref::layernorm, forward (out, mean, rstd) and accumulating backward, with and
// without bias, on odd row counts and widths; the residual-fused forward vs its unfused reference.
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "dispatch_test_util.h"
#include "kernel_test_util.h"
#include "kernels/ops.h"

namespace nanogpt {
namespace {

using testing::expect_within;
using testing::kEps;
using testing::random_normal;

class LayerNormTest : public ::testing::TestWithParam<std::tuple<int, int, bool>> {};

// The forward and backward against the reference on one shape, within the error model below.
void expect_layernorm_matches_reference(int N, int C, bool with_bias) {
  auto x = random_normal(size_t(N) * C, 1, 2.0f);
  for (auto& v : x) v += 0.5f;  // nonzero mean
  const auto w = random_normal(C, 2), b = random_normal(C, 3);
  const float* bias = with_bias ? b.data() : nullptr;
  std::vector<float> out(size_t(N) * C), mean(N), rstd(N);
  std::vector<float> out_r(size_t(N) * C), mean_r(N), rstd_r(N);
  cpu::layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), bias, N, C);
  ref::layernorm_forward(out_r.data(), mean_r.data(), rstd_r.data(), x.data(), w.data(), bias, N,
                         C);
  // Float sums of length C: relative error of mean (w.r.t. mean|x|) and of the variance
  // <= ~sqrt(C) eps each (vectorized partial sums); allow 4 sqrt(C) eps. An error d_m in the mean
  // moves out by |w| rstd d_m, a relative error of rstd moves out by |xhat w| times it.
  const double r = 4 * std::sqrt(static_cast<double>(C)) * kEps;
  std::vector<double> tol_out(out.size()), tol_mean(N), tol_rstd(N);
  for (int n = 0; n < N; ++n) {
    double mabs = 0;
    for (int c = 0; c < C; ++c) mabs += std::fabs(x[size_t(n) * C + c]);
    mabs /= C;
    tol_mean[n] = r * mabs;
    tol_rstd[n] = r * rstd_r[n];
    for (int c = 0; c < C; ++c) {
      const size_t i = size_t(n) * C + c;
      const double xhat = (x[i] - mean_r[n]) * rstd_r[n];
      tol_out[i] = std::fabs(w[c]) * (rstd_r[n] * r * mabs + r * std::fabs(xhat)) +
                   2 * kEps * std::fabs(out_r[i]) + 1e-30;
    }
  }
  expect_within(out, out_r, tol_out, "out");
  expect_within(mean, mean_r, tol_mean, "mean");
  expect_within(rstd, rstd_r, tol_rstd, "rstd");

  const auto dout = random_normal(size_t(N) * C, 4);
  const auto dinp0 = random_normal(size_t(N) * C, 5), dw0 = random_normal(C, 6),
             db0 = random_normal(C, 7);
  auto dinp = dinp0, dw = dw0, db = db0, dinp_r = dinp0, dw_r = dw0, db_r = db0;
  float* dbias = with_bias ? db.data() : nullptr;
  float* dbias_r = with_bias ? db_r.data() : nullptr;
  cpu::layernorm_backward(dinp.data(), dw.data(), dbias, dout.data(), x.data(), w.data(),
                          mean_r.data(), rstd_r.data(), N, C);
  ref::layernorm_backward(dinp_r.data(), dw_r.data(), dbias_r, dout.data(), x.data(), w.data(),
                          mean_r.data(), rstd_r.data(), N, C);
  // dinp: two float row sums of length C (of g and g*xhat), each with error <= r * sum|.|, enter
  // dinp with weight rstd/C and rstd|xhat|/C; plus a few roundings of the row terms.
  // dweight/dbias: column sums over N rows (per-thread partials): <= 4 sqrt(N) eps sum|.|.
  const double rn = 4 * std::sqrt(static_cast<double>(N)) * kEps;
  std::vector<double> tol_dinp(dinp.size()), tol_dw(C), tol_db(C);
  for (int c = 0; c < C; ++c) {
    tol_dw[c] = 2 * kEps * std::fabs(dw0[c]) + 1e-30;
    tol_db[c] = 2 * kEps * std::fabs(db0[c]) + 1e-30;
  }
  for (int n = 0; n < N; ++n) {
    double sg = 0, sgx = 0;
    for (int c = 0; c < C; ++c) {
      const size_t i = size_t(n) * C + c;
      const double xhat = (x[i] - mean_r[n]) * rstd_r[n];
      sg += std::fabs(dout[i] * w[c]);
      sgx += std::fabs(dout[i] * w[c] * xhat);
      tol_dw[c] += rn * std::fabs(dout[i] * xhat);
      tol_db[c] += rn * std::fabs(dout[i]);
    }
    for (int c = 0; c < C; ++c) {
      const size_t i = size_t(n) * C + c;
      const double xhat = (x[i] - mean_r[n]) * rstd_r[n];
      tol_dinp[i] =
          rstd_r[n] *
              (r * sg / C + r * std::fabs(xhat) * sgx / C +
               4 * kEps * (std::fabs(dout[i] * w[c]) + sg / C + std::fabs(xhat) * sgx / C)) +
          2 * kEps * (std::fabs(dinp0[i]) + std::fabs(dinp_r[i])) + 1e-30;
    }
  }
  expect_within(dinp, dinp_r, tol_dinp, "dinp");
  expect_within(dw, dw_r, tol_dw, "dweight");
  expect_within(db, db_r, with_bias ? tol_db : std::vector<double>(C, 0.0), "dbias");
}

TEST_P(LayerNormTest, MatchesReference) {
  const auto [N, C, with_bias] = GetParam();
  expect_layernorm_matches_reference(N, C, with_bias);
}

// On every CPU target this machine runs (the kernels are dispatched).
TEST_P(LayerNormTest, MatchesReferenceOnEveryTarget) {
  const auto [N, C, with_bias] = GetParam();
  testing::for_each_target(
      [&](const std::string&) { expect_layernorm_matches_reference(N, C, with_bias); });
}

// fused=True's residual + LayerNorm in one pass: its unfused reference is residual_forward then
// layernorm_forward (cpu, bit-identical by construction: the backward recomputes LayerNorm with
// layernorm_forward and relies on the same mean and rstd), and ref's composition within the
// tolerances of the test above (the sum a + b itself is exact in both).
TEST_P(LayerNormTest, ResidualFusedEqualsResidualThenLayerNorm) {
  const auto [N, C, with_bias] = GetParam();
  const auto a = random_normal(size_t(N) * C, 8, 2.0f), b = random_normal(size_t(N) * C, 9);
  const auto w = random_normal(C, 2), bi = random_normal(C, 3);
  const float* bias = with_bias ? bi.data() : nullptr;
  std::vector<float> res(size_t(N) * C), out(res.size()), mean(N), rstd(N);
  std::vector<float> res_u(res.size()), out_u(res.size()), mean_u(N), rstd_u(N);
  cpu::residual_layernorm_forward(res.data(), out.data(), mean.data(), rstd.data(), a.data(),
                                  b.data(), w.data(), bias, N, C);
  cpu::residual_forward(res_u.data(), a.data(), b.data(), int64_t{N} * C);
  cpu::layernorm_forward(out_u.data(), mean_u.data(), rstd_u.data(), res_u.data(), w.data(), bias,
                         N, C);
  EXPECT_EQ(res, res_u);
  EXPECT_EQ(out, out_u);
  EXPECT_EQ(mean, mean_u);
  EXPECT_EQ(rstd, rstd_u);
  std::vector<float> res_r(res.size()), out_r(res.size()), mean_r(N), rstd_r(N);
  ref::residual_forward(res_r.data(), a.data(), b.data(), int64_t{N} * C);
  ref::layernorm_forward(out_r.data(), mean_r.data(), rstd_r.data(), res_r.data(), w.data(), bias,
                         N, C);
  EXPECT_EQ(res, res_r);
  const double r = 4 * std::sqrt(static_cast<double>(C)) * kEps;
  std::vector<double> tol_out(out.size());
  for (int n = 0; n < N; ++n) {
    double mabs = 0;
    for (int c = 0; c < C; ++c) mabs += std::fabs(res_r[size_t(n) * C + c]);
    mabs /= C;
    for (int c = 0; c < C; ++c) {
      const size_t i = size_t(n) * C + c;
      const double xhat = (res_r[i] - mean_r[n]) * rstd_r[n];
      tol_out[i] = std::fabs(w[c]) * (rstd_r[n] * r * mabs + r * std::fabs(xhat)) +
                   2 * kEps * std::fabs(out_r[i]) + 1e-30;
    }
  }
  expect_within(out, out_r, tol_out, "out");
}

INSTANTIATE_TEST_SUITE_P(Shapes, LayerNormTest,
                         ::testing::Values(std::make_tuple(1, 48, true),
                                           std::make_tuple(37, 48, false),
                                           std::make_tuple(64, 768, true),
                                           std::make_tuple(13, 33, true),
                                           // above kernels/cpu's parallel threshold (parallel.h)
                                           std::make_tuple(1100, 128, true)));

// Small calls run on the calling thread, large ones in parallel (kernels/cpu/parallel.h): the rows
// (and the backward's dinp rows) must not depend on that. One call over 1100 rows (parallel) equals
// eleven calls over 100 rows (each below the threshold) bit for bit.
TEST(LayerNormParallelTest, OneLargeCallEqualsSmallCallsBitForBit) {
  const int N = 1100, C = 128, R = 100;
  const auto a = random_normal(size_t(N) * C, 21, 2.0f), b = random_normal(size_t(N) * C, 22);
  const auto w = random_normal(C, 23), bi = random_normal(C, 24),
             dout = random_normal(a.size(), 25);
  std::vector<float> res(a.size()), out(a.size()), mean(N), rstd(N), dinp(a.size(), 0.5f);
  std::vector<float> res_s(a.size()), out_s(a.size()), mean_s(N), rstd_s(N), dinp_s(a.size(), 0.5f);
  std::vector<float> dw(C), db(C), dw_s(C), db_s(C);
  cpu::residual_layernorm_forward(res.data(), out.data(), mean.data(), rstd.data(), a.data(),
                                  b.data(), w.data(), bi.data(), N, C);
  cpu::layernorm_backward(dinp.data(), dw.data(), db.data(), dout.data(), res.data(), w.data(),
                          mean.data(), rstd.data(), N, C);
  for (int n0 = 0; n0 < N; n0 += R) {
    const size_t o = size_t(n0) * C;
    cpu::residual_layernorm_forward(res_s.data() + o, out_s.data() + o, mean_s.data() + n0,
                                    rstd_s.data() + n0, a.data() + o, b.data() + o, w.data(),
                                    bi.data(), R, C);
    cpu::layernorm_backward(dinp_s.data() + o, dw_s.data(), db_s.data(), dout.data() + o,
                            res_s.data() + o, w.data(), mean_s.data() + n0, rstd_s.data() + n0, R,
                            C);
  }
  EXPECT_EQ(res, res_s);
  EXPECT_EQ(out, out_s);
  EXPECT_EQ(mean, mean_s);
  EXPECT_EQ(rstd, rstd_s);
  EXPECT_EQ(dinp, dinp_s);
  // dweight/dbias: the same sums in another order (column sums over N rows).
  for (int c = 0; c < C; ++c) {
    double sw = 0, sb = 0;
    for (int n = 0; n < N; ++n) {
      const size_t i = size_t(n) * C + c;
      sw += std::fabs(dout[i] * (res[i] - mean[n]) * rstd[n]);
      sb += std::fabs(dout[i]);
    }
    const double rn = 4 * std::sqrt(static_cast<double>(N)) * kEps;
    EXPECT_NEAR(dw[c], dw_s[c], rn * sw + 1e-30) << c;
    EXPECT_NEAR(db[c], db_s[c], rn * sb + 1e-30) << c;
  }
}

}  // namespace
}  // namespace nanogpt
