// cpu (flash) attention vs ref attention: forward (out, lse), accumulating backward, with and
// without dropout, on odd T (not a multiple of the 32/64 tiles), HS 16/32/64/24, N = B*T small;
// every parallel split (thread counts 1..8: query-block tasks, key groups per head) vs ref;
// attention_naive (materialized T x T probabilities) vs ref; and attention_decode vs ref and vs
// the last row of the causal forward.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <tuple>

#include "core/rng.h"
#include "dispatch_test_util.h"
#include "kernel_test_util.h"
#include "kernels/cpu_backend.h"
#include "kernels/ops.h"
#include "kernels/ops_lowp.h"

namespace nanogpt {
namespace {

using testing::expect_within;
using testing::kEps;
using testing::random_normal;
using testing::ScopedOmpThreads;

// Error model. A score is a float dot product of length HS: |ds| <= 4 sqrt(HS) eps scale
// sum|q k|. A probability P = exp(s - lse) then has relative error
// dP <= 2 max|ds| + 4 eps (2 + |lse| + |s|) (score and lse errors, 2-ulp exp, roundings).
// (The flash forward evaluates exp as 2^(s scale log2 e - m log2 e) with a 1-ulp Exp2
// (attention_tiles-inl.h): the rounding of the folded constants adds eps (|s| + |m|), inside the
// same term. Its running max m may lag the row's max by up to kLazyRescale = 8, so l may reach e^8
// T: log l then carries up to (8 + log T) eps more, which the 4 sqrt(T) eps term below covers for T
// > 64, the only case where m can lag: with one key block m is that block's exact max.) A sum over
// up to T keys adds 4 sqrt(T) eps relative to the sum of magnitudes. Each gradient's tolerance
// below is these relative errors times the magnitude of the terms summed, computed in double from
// the same inputs, plus 2 eps (|initial| + |ref|) for the final accumulation.
struct AttnTolerance {
  std::vector<double> out, lse, dqkv;
};

AttnTolerance attention_tolerance(const std::vector<float>& qkv, const std::vector<float>& dout,
                                  const std::vector<float>& out, const std::vector<float>& lse,
                                  const std::vector<float>& dqkv0, const std::vector<float>& dqkv_r,
                                  int B, int T, int C, int NH, float p, uint64_t seed) {
  const int HS = C / NH;
  const double scale = 1.0 / std::sqrt(double(HS)), ks = p > 0 ? 1.0 / (1.0 - p) : 1.0;
  const double rhs = 4 * std::sqrt(double(HS)) * kEps, rt = 4 * std::sqrt(double(T)) * kEps;
  AttnTolerance tol{std::vector<double>(out.size(), 0.0), std::vector<double>(lse.size(), 0.0),
                    std::vector<double>(qkv.size(), 0.0)};
  auto at = [&](int b, int t, int part, int h) {
    return qkv.data() + (size_t(b) * T + t) * 3 * C + part * C + h * HS;
  };
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < NH; ++h) {
      double ds_max = 0;  // largest score error of this head
      for (int t = 0; t < T; ++t) {
        for (int s = 0; s <= t; ++s) {
          double m = 0;
          for (int x = 0; x < HS; ++x) m += std::fabs(at(b, t, 0, h)[x] * at(b, s, 1, h)[x]);
          ds_max = std::max(ds_max, rhs * scale * m);
        }
      }
      for (int t = 0; t < T; ++t) {
        const double l = lse[(size_t(b) * NH + h) * T + t];
        const float* dO = dout.data() + (size_t(b) * T + t) * C + h * HS;
        const float* o = out.data() + (size_t(b) * T + t) * C + h * HS;
        double D = 0, dmag = 0;
        for (int x = 0; x < HS; ++x) D += double(dO[x]) * o[x], dmag += std::fabs(dO[x] * o[x]);
        tol.lse[(size_t(b) * NH + h) * T + t] = ds_max + rt + 2 * kEps * std::fabs(l);
        for (int s = 0; s <= t; ++s) {
          double sc = 0, dp = 0, dpmag = 0;
          for (int x = 0; x < HS; ++x) {
            sc += double(at(b, t, 0, h)[x]) * at(b, s, 1, h)[x];
            dp += double(dO[x]) * at(b, s, 2, h)[x];
            dpmag += std::fabs(dO[x] * at(b, s, 2, h)[x]);
          }
          sc *= scale;
          const double P = std::exp(sc - l);
          const uint64_t idx = ((uint64_t(b) * NH + h) * T + t) * T + s;
          const double M = p == 0 ? 1.0 : (hash_uniform(seed, idx) >= p ? ks : 0.0);
          const double dP = 2 * ds_max + 4 * kEps * (2 + std::fabs(l) + std::fabs(sc));
          const double dS = scale * P * std::fabs(dp * M - D);
          const double eS =
              scale * P * (dP * (std::fabs(dp * M) + std::fabs(D)) + M * rhs * dpmag + rhs * dmag) +
              rt * dS;
          for (int x = 0; x < HS; ++x) {
            tol.out[(size_t(b) * T + t) * C + h * HS + x] +=
                (dP + rt) * P * M * std::fabs(at(b, s, 2, h)[x]);
            const size_t iq = (size_t(b) * T + t) * 3 * C + h * HS + x;
            const size_t ik = (size_t(b) * T + s) * 3 * C + C + h * HS + x;
            tol.dqkv[iq] += eS * std::fabs(at(b, s, 1, h)[x]);
            tol.dqkv[ik] += eS * std::fabs(at(b, t, 0, h)[x]);
            tol.dqkv[ik + C] += (dP + rt) * P * M * std::fabs(dO[x]);
          }
        }
      }
    }
  }
  for (size_t i = 0; i < out.size(); ++i) tol.out[i] += 2 * kEps * std::fabs(out[i]) + 1e-30;
  for (size_t i = 0; i < qkv.size(); ++i) {
    tol.dqkv[i] += 2 * kEps * (std::fabs(dqkv0[i]) + std::fabs(dqkv_r[i])) + 1e-30;
  }
  return tol;
}

// The flash forward and backward against the reference on (qkv, dout), within attention_tolerance.
// The backward accumulates into nonzero gradients (random, from dqkv_seed), as it must.
void expect_flash_matches_reference(const std::vector<float>& qkv, const std::vector<float>& dout,
                                    int B, int T, int C, int NH, float p, uint64_t seed,
                                    uint64_t dqkv_seed) {
  std::vector<float> out(size_t(B) * T * C), lse(size_t(B) * NH * T);
  std::vector<float> out_r(out.size()), lse_r(lse.size());
  cpu::attention_forward(out.data(), lse.data(), qkv.data(), B, T, C, NH, p, seed);
  ref::attention_forward(out_r.data(), lse_r.data(), qkv.data(), B, T, C, NH, p, seed);
  const auto dqkv0 = random_normal(qkv.size(), dqkv_seed);
  auto dqkv = dqkv0, dqkv_r = dqkv0;
  cpu::attention_backward(dqkv.data(), dout.data(), out_r.data(), lse_r.data(), qkv.data(), B, T, C,
                          NH, p, seed);
  ref::attention_backward(dqkv_r.data(), dout.data(), out_r.data(), lse_r.data(), qkv.data(), B, T,
                          C, NH, p, seed);
  const auto tol =
      attention_tolerance(qkv, dout, out_r, lse_r, dqkv0, dqkv_r, B, T, C, NH, p, seed);
  expect_within(out, out_r, tol.out, "out");
  expect_within(lse, lse_r, tol.lse, "lse");
  expect_within(dqkv, dqkv_r, tol.dqkv, "dqkv");
}

class AttentionTest : public ::testing::TestWithParam<std::tuple<int, int, int, int, float>> {};

TEST_P(AttentionTest, FlashMatchesReference) {
  const auto [B, T, C, NH, p] = GetParam();
  const uint64_t seed = 99;
  const auto qkv = random_normal(size_t(B) * T * 3 * C, 1);
  const auto dout = random_normal(size_t(B) * T * C, 2);
  expect_flash_matches_reference(qkv, dout, B, T, C, NH, p, seed, 3);
}

// The dispatched kernel on every CPU target this machine runs (AVX2, SSE4, baseline ... on an
// AVX-512 machine), each within the same tolerances.
TEST_P(AttentionTest, FlashMatchesReferenceOnEveryTarget) {
  const auto [B, T, C, NH, p] = GetParam();
  const auto qkv = random_normal(size_t(B) * T * 3 * C, 11);
  const auto dout = random_normal(size_t(B) * T * C, 12);
  testing::for_each_target([&](const std::string&) {
    expect_flash_matches_reference(qkv, dout, B, T, C, NH, p, 98, 13);
  });
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, AttentionTest,
    ::testing::Values(std::make_tuple(2, 37, 48, 3, 0.0f),    // HS 16, T odd
                      std::make_tuple(2, 37, 48, 3, 0.2f),    // with dropout
                      std::make_tuple(1, 1, 48, 3, 0.0f),     // T = 1
                      std::make_tuple(1, 130, 128, 2, 0.0f),  // HS 64, T > 2 key tiles
                      std::make_tuple(1, 130, 128, 2, 0.1f),
                      std::make_tuple(3, 64, 64, 2, 0.0f),    // HS 32, T exactly one tile
                      std::make_tuple(1, 71, 72, 3, 0.0f)));  // HS 24 (padded to 32)

// attention=naive: the materialized path against the same reference and tolerances, and its
// stored probabilities against exp(score - lse) of the reference (zero above the diagonal), on
// every CPU target this machine can run.
TEST_P(AttentionTest, NaiveMatchesReference) {
  testing::for_each_target([&](const std::string&) {
    const auto [B, T, C, NH, p] = GetParam();
    const uint64_t seed = 99;
    const auto qkv = random_normal(size_t(B) * T * 3 * C, 1);
    const auto dout = random_normal(size_t(B) * T * C, 2);
    std::vector<float> out(size_t(B) * T * C), att(size_t(B) * NH * T * T, -1.0f);
    std::vector<float> out_r(out.size()), lse_r(size_t(B) * NH * T);
    cpu::attention_naive_forward(out.data(), att.data(), qkv.data(), B, T, C, NH, p, seed);
    ref::attention_forward(out_r.data(), lse_r.data(), qkv.data(), B, T, C, NH, p, seed);
    const auto dqkv0 = random_normal(qkv.size(), 3);
    auto dqkv = dqkv0, dqkv_r = dqkv0;
    cpu::attention_naive_backward(dqkv.data(), dout.data(), att.data(), qkv.data(), B, T, C, NH, p,
                                  seed);
    ref::attention_backward(dqkv_r.data(), dout.data(), out_r.data(), lse_r.data(), qkv.data(), B,
                            T, C, NH, p, seed);
    const auto tol =
        attention_tolerance(qkv, dout, out_r, lse_r, dqkv0, dqkv_r, B, T, C, NH, p, seed);
    expect_within(out, out_r, tol.out, "out");
    expect_within(dqkv, dqkv_r, tol.dqkv, "dqkv");
    // P = exp(score * scale - lse): relative error of the score and lse (as tol.lse) plus the 2-ulp
    // exp and the normalization.
    const int HS = C / NH;
    const double scale = 1.0 / std::sqrt(double(HS));
    std::vector<float> p_r(att.size());
    std::vector<double> p_tol(att.size());
    for (int b = 0; b < B; ++b) {
      for (int h = 0; h < NH; ++h) {
        for (int t = 0; t < T; ++t) {
          const size_t row = ((size_t(b) * NH + h) * T + t) * T, li = (size_t(b) * NH + h) * T + t;
          for (int s2 = 0; s2 < T; ++s2) {
            double sc = 0;
            for (int x = 0; x < HS; ++x) {
              sc += double(qkv[(size_t(b) * T + t) * 3 * C + h * HS + x]) *
                    qkv[(size_t(b) * T + s2) * 3 * C + C + h * HS + x];
            }
            const double pr = s2 <= t ? std::exp(sc * scale - lse_r[li]) : 0.0;
            p_r[row + s2] = static_cast<float>(pr);
            p_tol[row + s2] = pr * (2 * tol.lse[li] + 8 * kEps) + 1e-30;
          }
        }
      }
    }
    expect_within(att, p_r, p_tol, "att");
  });
}

// Scores that rise along the keys (a trend of g per key added through a shared direction u of Q
// and K: head 0 g = 0.2, about 13 per 64-key block, so every block raises the running max past the
// lazy-rescale threshold; head 1 g = 0.1, 6.4 per block, so the max is kept for a block and raised
// at the next): the forward's rescaling of the accumulated output and sum, against the reference.
// (Unit-normal inputs alone almost never raise the max by more than the threshold after the first
// key block.)
class AttentionRescaleTest : public ::testing::TestWithParam<float> {};

TEST_P(AttentionRescaleTest, RisingScoresMatchReference) {
  const float p = GetParam();
  const int B = 1, T = 200, C = 64, NH = 2, HS = C / NH;
  const uint64_t seed = 5;
  auto qkv = random_normal(size_t(B) * T * 3 * C, 21);
  const auto dout = random_normal(size_t(B) * T * C, 22);
  for (int h = 0; h < NH; ++h) {
    const float g = h == 0 ? 0.2f : 0.1f;
    for (int t = 0; t < T; ++t) {
      // u = (1, ..., 1) / sqrt(HS): q_t . k_s * scale gains g * s (scale = 1 / sqrt(HS)).
      for (int x = 0; x < HS; ++x) {
        qkv[size_t(t) * 3 * C + h * HS + x] += 1.0f;
        qkv[size_t(t) * 3 * C + C + h * HS + x] += g * t / HS * std::sqrt(float(HS));
      }
    }
  }
  expect_flash_matches_reference(qkv, dout, B, T, C, NH, p, seed, 23);
}

INSTANTIATE_TEST_SUITE_P(Dropout, AttentionRescaleTest, ::testing::Values(0.0f, 0.1f));

// The parallel split depends on the thread count (query-block tasks forward; key groups per head
// backward, more groups when B*NH is small; whole heads in static bands at small T when they go
// round evenly): every split must give the reference's results.
class AttentionSplitTest : public ::testing::TestWithParam<std::tuple<int, int, int, int, float>> {
};

TEST_P(AttentionSplitTest, EveryThreadCountMatchesReference) {
  const auto [B, T, C, NH, p] = GetParam();
  const uint64_t seed = 7;
  const auto qkv = random_normal(size_t(B) * T * 3 * C, 11);
  const auto dout = random_normal(size_t(B) * T * C, 12);
  const auto dqkv0 = random_normal(qkv.size(), 13);
  std::vector<float> out_r(size_t(B) * T * C), lse_r(size_t(B) * NH * T);
  ref::attention_forward(out_r.data(), lse_r.data(), qkv.data(), B, T, C, NH, p, seed);
  auto dqkv_r = dqkv0;
  ref::attention_backward(dqkv_r.data(), dout.data(), out_r.data(), lse_r.data(), qkv.data(), B, T,
                          C, NH, p, seed);
  const auto tol =
      attention_tolerance(qkv, dout, out_r, lse_r, dqkv0, dqkv_r, B, T, C, NH, p, seed);
  const ScopedOmpThreads omp_threads;
  for (int threads : {1, 2, 3, 5, 8}) {
    SCOPED_TRACE(::testing::Message() << "threads " << threads);
    omp_threads.set(threads);
    std::vector<float> out(out_r.size()), lse(lse_r.size());
    cpu::attention_forward(out.data(), lse.data(), qkv.data(), B, T, C, NH, p, seed);
    auto dqkv = dqkv0;
    cpu::attention_backward(dqkv.data(), dout.data(), out_r.data(), lse_r.data(), qkv.data(), B, T,
                            C, NH, p, seed);
    expect_within(out, out_r, tol.out, "out");
    expect_within(lse, lse_r, tol.lse, "lse");
    expect_within(dqkv, dqkv_r, tol.dqkv, "dqkv");
  }
}

INSTANTIATE_TEST_SUITE_P(
    Splits, AttentionSplitTest,
    ::testing::Values(std::make_tuple(1, 200, 64, 1, 0.0f),   // one head: up to 4 key groups
                      std::make_tuple(1, 200, 64, 1, 0.15f),  // ... with dropout
                      std::make_tuple(2, 97, 64, 2, 0.0f),    // T odd, not a multiple of 32/64
                      std::make_tuple(1, 33, 48, 3, 0.1f),    // HS 16, one key block
                      // W1's shape: 48 whole heads dealt statically (attention_dims.h)
                      std::make_tuple(12, 64, 128, 4, 0.1f)));

// Through a CpuBackend the float32 kernel reuses its per-thread scratch between calls (the
// context's AttentionWorkspace, never zeroed again): calls of different shapes in turn (the larger
// first, so the smaller ones find the larger one's leftovers, then with more threads) give the
// same bits as the context-free calls, whose scratch is fresh and zeroed.
TEST(AttentionWorkspaceTest, ReusedScratchGivesTheSameBits) {
  struct Shape {
    int B, T, C, NH;
    float p;
  };
  const Shape shapes[] = {{1, 200, 64, 1, 0.0f},  // one head, HS 64, key groups in backward
                          {2, 37, 48, 3, 0.2f},   // HS 16, odd T, dropout
                          {1, 71, 72, 3, 0.0f},   // HS 24 (padded to 32)
                          {2, 130, 128, 2, 0.1f}};
  CpuBackend ctx;
  const ScopedOmpThreads omp_threads;
  for (int threads : {1, 3}) {
    omp_threads.set(threads);
    for (const Shape& s : shapes) {
      SCOPED_TRACE(::testing::Message() << "threads " << threads << " T " << s.T << " C " << s.C);
      const auto qkv = random_normal(size_t(s.B) * s.T * 3 * s.C, 31);
      const auto dout = random_normal(size_t(s.B) * s.T * s.C, 32);
      const auto dqkv0 = random_normal(qkv.size(), 33);
      std::vector<float> out(dout.size()), lse(size_t(s.B) * s.NH * s.T), out_c(out.size()),
          lse_c(lse.size());
      auto dqkv = dqkv0, dqkv_c = dqkv0;
      cpu::attention_forward(out.data(), lse.data(), qkv.data(), s.B, s.T, s.C, s.NH, s.p, 9);
      cpu::attention_backward(dqkv.data(), dout.data(), out.data(), lse.data(), qkv.data(), s.B,
                              s.T, s.C, s.NH, s.p, 9);
      cpu::attention_forward(ctx, TypedPtr(out_c.data()), lse_c.data(), ConstTypedPtr(qkv.data()),
                             s.B, s.T, s.C, s.NH, s.p, 9);
      cpu::attention_backward(ctx, TypedPtr(dqkv_c.data()), ConstTypedPtr(dout.data()),
                              ConstTypedPtr(out.data()), lse.data(), ConstTypedPtr(qkv.data()), s.B,
                              s.T, s.C, s.NH, s.p, 9);
      expect_within(out_c, out, 0.0, "out");
      expect_within(lse_c, lse, 0.0, "lse");
      expect_within(dqkv_c, dqkv, 0.0, "dqkv");
    }
  }
}

// On every CPU target this machine can run; head sizes 32, 30 and 100: whole vectors, partial
// last vectors, and (HS 100) the four-vector blocks of the weighted values with both tails.
TEST(AttentionDecodeTest, MatchesReferenceAndLastForwardRow) {
  for (const auto& [T, C, NH] :
       {std::tuple{45, 96, 3}, std::tuple{45, 90, 3}, std::tuple{7, 200, 2}}) {
    testing::for_each_target([&](const std::string&) {
      const auto qkv = random_normal(size_t(T) * 3 * C, 5);
      std::vector<float> kc(size_t(T) * C), vc(size_t(T) * C), q(C);
      for (int t = 0; t < T; ++t) {
        for (int c = 0; c < C; ++c) {
          kc[size_t(t) * C + c] = qkv[size_t(t) * 3 * C + C + c];
          vc[size_t(t) * C + c] = qkv[size_t(t) * 3 * C + 2 * C + c];
        }
      }
      for (int c = 0; c < C; ++c) q[c] = qkv[size_t(T - 1) * 3 * C + c];
      std::vector<float> out(C), out_r(C), full(size_t(T) * C), lse(size_t(NH) * T);
      cpu::attention_decode(out.data(), q.data(), kc.data(), vc.data(), T, C, NH);
      ref::attention_decode(out_r.data(), q.data(), kc.data(), vc.data(), T, C, NH);
      ref::attention_forward(full.data(), lse.data(), qkv.data(), 1, T, C, NH, 0.0f, 0);
      const std::vector<float> last(full.end() - C, full.end());
      // |out| <= max|v| (convex combination); score/softmax errors as in the forward test: 4
      // sqrt(HS) eps scale sum|qk| (<= ~3 for unit normals) + 4 sqrt(T) eps, times max|v| ~ 4.
      const double HS = C / NH;
      const double tol =
          4 * 4 * kEps * (std::sqrt(HS) * 3 * std::sqrt(HS) + std::sqrt(double(T)) + 4);
      expect_within(out, out_r, tol, "decode vs ref");
      expect_within(out_r, last, 4 * kEps, "ref decode vs ref forward last row");
    });
  }
}

}  // namespace
}  // namespace nanogpt
