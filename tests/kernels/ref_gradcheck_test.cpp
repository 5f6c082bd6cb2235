// Tier-2 checks: every ref backward formula (and the cpu fused MLP backward) vs central finite
// differences of a DOUBLE-precision copy of the forward math written here (so the check does not
// inherit float rounding). The loss is L = sum_i dout_i * out_i with random dout; gradients are
// pre-filled with a known value G0 and (grad - G0) is compared, which also checks the += semantics.
//
// Tolerance: |g_ref - g_fd| <= 1e-5 (1 + |g_fd|). The ref backward returns float (relative
// rounding 6e-8) computed from float intermediates (mean/rstd/lse: relative 6e-8, amplified by
// |x| <= ~10 here) so it is within ~1e-6 relative; central differences with h = 1e-3 have
// truncation error h^2/6 |f'''| <= ~2e-7 for these O(1)-curvature functions, and double rounding
// ~1e-16/h = 1e-13. A wrong term in a formula gives errors of order 1e-2..1.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <numbers>
#include <string>
#include <vector>

#include "core/rng.h"
#include "finite_differences.h"
#include "kernel_test_util.h"
#include "kernels/cpu_backend.h"
#include "kernels/ops.h"
#include "kernels/ops_lowp.h"

namespace nanogpt {
namespace {

using testing::dot;
using testing::random_normal;
using testing::to_d;
using Vd = std::vector<double>;

constexpr double kH = 1e-3;
constexpr float kG0 = 0.25f;

// The shared check (finite_differences.h) against grad - kG0: also checks the += semantics.
void check_grad(Vd& x, const std::function<double()>& loss, const std::vector<float>& grad,
                const std::string& what) {
  testing::check_grad(x, loss, grad, what, kG0, kH);
}

std::vector<float> filled(size_t n) { return std::vector<float>(n, kG0); }

// ---- double forward copies ----

Vd layernorm_d(const Vd& x, const Vd& w, const Vd* b, int N, int C) {
  Vd out(x.size());
  for (int n = 0; n < N; ++n) {
    double m = 0, v = 0;
    for (int c = 0; c < C; ++c) m += x[n * C + c];
    m /= C;
    for (int c = 0; c < C; ++c) v += (x[n * C + c] - m) * (x[n * C + c] - m);
    v /= C;
    const double s = 1 / std::sqrt(v + 1e-5);
    for (int c = 0; c < C; ++c) out[n * C + c] = (x[n * C + c] - m) * s * w[c] + (b ? (*b)[c] : 0);
  }
  return out;
}

double gelu_d(double x, MlpActivation kind) {
  if (kind == MlpActivation::kExact) return 0.5 * x * (1 + std::erf(x / std::numbers::sqrt2));
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
}

Vd attention_d(const Vd& qkv, int B, int T, int C, int NH, float p, uint64_t seed) {
  const int HS = C / NH;
  const double scale = 1 / std::sqrt(double(HS));
  Vd out(size_t(B) * T * C, 0.0), sc(T);
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < NH; ++h) {
      for (int t = 0; t < T; ++t) {
        const double* q = &qkv[(size_t(b) * T + t) * 3 * C + h * HS];
        double mx = -1e300, sum = 0;
        for (int s = 0; s <= t; ++s) {
          const double* k = &qkv[(size_t(b) * T + s) * 3 * C + C + h * HS];
          double d = 0;
          for (int x = 0; x < HS; ++x) d += q[x] * k[x];
          sc[s] = d * scale;
          mx = std::max(mx, sc[s]);
        }
        for (int s = 0; s <= t; ++s) sum += std::exp(sc[s] - mx);
        for (int s = 0; s <= t; ++s) {
          double pr = std::exp(sc[s] - mx) / sum;
          if (p > 0) {
            const uint64_t idx = ((uint64_t(b) * NH + h) * T + t) * T + s;
            pr = hash_uniform(seed, idx) >= p ? pr / (1.0 - p) : 0.0;
          }
          const double* v = &qkv[(size_t(b) * T + s) * 3 * C + 2 * C + h * HS];
          for (int x = 0; x < HS; ++x) out[(size_t(b) * T + t) * C + h * HS + x] += pr * v[x];
        }
      }
    }
  }
  return out;
}

Vd crossentropy_d(const Vd& logits, const std::vector<int>& targets, int N, int V, int Vp) {
  Vd losses(N, 0.0);
  for (int n = 0; n < N; ++n) {
    if (targets[n] < 0) continue;
    double mx = -1e300, s = 0;
    for (int v = 0; v < V; ++v) mx = std::max(mx, logits[n * Vp + v]);
    for (int v = 0; v < V; ++v) s += std::exp(logits[n * Vp + v] - mx);
    losses[n] = mx + std::log(s) - logits[n * Vp + targets[n]];
  }
  return losses;
}

// ---- checks ----

class LayerNormGrad : public ::testing::TestWithParam<bool> {};

TEST_P(LayerNormGrad, MatchesFiniteDifferences) {
  const bool with_bias = GetParam();
  const int N = 3, C = 7;
  const auto xf = random_normal(N * C, 1), wf = random_normal(C, 2), bf = random_normal(C, 3);
  const auto dout = random_normal(N * C, 4);
  std::vector<float> out(N * C), mean(N), rstd(N);
  ref::layernorm_forward(out.data(), mean.data(), rstd.data(), xf.data(), wf.data(),
                         with_bias ? bf.data() : nullptr, N, C);
  auto dx = filled(N * C), dw = filled(C), db = filled(C);
  ref::layernorm_backward(dx.data(), dw.data(), with_bias ? db.data() : nullptr, dout.data(),
                          xf.data(), wf.data(), mean.data(), rstd.data(), N, C);
  Vd x = to_d(xf), w = to_d(wf), b = to_d(bf);
  auto loss = [&] { return dot(layernorm_d(x, w, with_bias ? &b : nullptr, N, C), dout); };
  check_grad(x, loss, dx, "dinp");
  check_grad(w, loss, dw, "dweight");
  if (with_bias)
    check_grad(b, loss, db, "dbias");
  else
    EXPECT_EQ(db, filled(C)) << "no bias: dbias untouched";
}

INSTANTIATE_TEST_SUITE_P(Bias, LayerNormGrad, ::testing::Bool());

class GeluGrad : public ::testing::TestWithParam<MlpActivation> {};

TEST_P(GeluGrad, MatchesFiniteDifferences) {
  const MlpActivation kind = GetParam();
  const int N = 41;
  const auto xf = random_normal(N, 1, 2.5f), dout = random_normal(N, 2);
  auto dx = filled(N);
  ref::gelu_backward(dx.data(), xf.data(), dout.data(), N, kind);
  Vd x = to_d(xf);
  auto loss = [&] {
    double s = 0;
    for (int i = 0; i < N; ++i) s += gelu_d(x[i], kind) * dout[i];
    return s;
  };
  check_grad(x, loss, dx, "gelu dinp");
  // And the ref forward against the double formula (float rounding only).
  std::vector<float> out(N);
  ref::gelu_forward(out.data(), xf.data(), N, kind);
  for (int i = 0; i < N; ++i) EXPECT_NEAR(out[i], gelu_d(x[i], kind), 1e-6 * (1 + std::fabs(x[i])));
}

INSTANTIATE_TEST_SUITE_P(Kinds, GeluGrad, ::testing::Values(MlpActivation::kTanh, MlpActivation::kExact));

class AttentionGrad : public ::testing::TestWithParam<float> {};

TEST_P(AttentionGrad, MatchesFiniteDifferences) {
  const float p = GetParam();
  const int B = 2, T = 5, C = 8, NH = 2;
  const uint64_t seed = 7;
  const auto qkvf = random_normal(size_t(B) * T * 3 * C, 1), dout = random_normal(B * T * C, 2);
  std::vector<float> out(B * T * C), lse(B * NH * T);
  ref::attention_forward(out.data(), lse.data(), qkvf.data(), B, T, C, NH, p, seed);
  auto dqkv = filled(qkvf.size());
  ref::attention_backward(dqkv.data(), dout.data(), out.data(), lse.data(), qkvf.data(), B, T, C,
                          NH, p, seed);
  Vd qkv = to_d(qkvf);
  const Vd want = attention_d(qkv, B, T, C, NH, p, seed);
  for (size_t i = 0; i < out.size(); ++i) EXPECT_NEAR(out[i], want[i], 1e-6) << "out " << i;
  check_grad(
      qkv, [&] { return dot(attention_d(qkv, B, T, C, NH, p, seed), dout); }, dqkv, "dqkv");
}

INSTANTIATE_TEST_SUITE_P(Dropout, AttentionGrad, ::testing::Values(0.0f, 0.3f));

TEST(CrossEntropyGrad, MatchesFiniteDifferencesWithIgnoreAndPadding) {
  const int N = 4, V = 9, Vp = 12;
  const auto lf = random_normal(N * Vp, 1, 2.0f);
  const std::vector<int> targets{3, -1, 8, 0};
  const float dloss = 0.37f;
  std::vector<float> losses(N), dl(N * Vp);
  ref::crossentropy_forward_backward(losses.data(), dl.data(), lf.data(), targets.data(), dloss, N,
                                     V, Vp);
  Vd logits = to_d(lf);
  const Vd want = crossentropy_d(logits, targets, N, V, Vp);
  for (int n = 0; n < N; ++n) EXPECT_NEAR(losses[n], want[n], 1e-6) << "loss " << n;
  // dlogits is overwritten (not accumulated): add kG0 so check_grad's "- kG0" cancels.
  for (auto& g : dl) g += kG0;
  check_grad(
      logits,
      [&] {
        double s = 0;
        for (double l : crossentropy_d(logits, targets, N, V, Vp)) s += dloss * l;
        return s;
      },
      dl, "dlogits");
}

TEST(MatmulGrad, MatchesFiniteDifferences) {
  const int N = 3, C = 5, OC = 4;
  const auto xf = random_normal(N * C, 1), wf = random_normal(OC * C, 2), bf = random_normal(OC, 3);
  const auto dout = random_normal(N * OC, 4);
  auto dx = filled(N * C), dw = filled(OC * C), db = filled(OC);
  ref::matmul_backward(dx.data(), dw.data(), db.data(), dout.data(), xf.data(), wf.data(), N, C,
                       OC);
  Vd x = to_d(xf), w = to_d(wf), b = to_d(bf);
  auto loss = [&] {
    double s = 0;
    for (int n = 0; n < N; ++n) {
      for (int o = 0; o < OC; ++o) {
        double y = b[o];
        for (int c = 0; c < C; ++c) y += x[n * C + c] * w[o * C + c];
        s += y * dout[n * OC + o];
      }
    }
    return s;
  };
  check_grad(x, loss, dx, "dinp");
  check_grad(w, loss, dw, "dweight");
  check_grad(b, loss, db, "dbias");
}

// The fused MLP backward (ops_lowp.h: out = gelu(pre) . W^T + b), ref and cpu: dweight and dbias
// accumulate (pre-filled with G0), dpre is OVERWRITTEN (pre-filled with garbage that must vanish).
class GeluMatmulGrad : public ::testing::TestWithParam<MlpActivation> {};

TEST_P(GeluMatmulGrad, MatchesFiniteDifferences) {
  const MlpActivation kind = GetParam();
  const int N = 3, C = 6, OC = 4;  // pre (N, C), W (OC, C), out (N, OC)
  const auto pf = random_normal(N * C, 1, 2.0f), wf = random_normal(OC * C, 2),
             bf = random_normal(OC, 3), dout = random_normal(N * OC, 4);
  Vd pre = to_d(pf), w = to_d(wf), b = to_d(bf);
  auto loss = [&] {
    double s = 0;
    for (int n = 0; n < N; ++n) {
      for (int o = 0; o < OC; ++o) {
        double y = b[o];
        for (int c = 0; c < C; ++c) y += gelu_d(pre[n * C + c], kind) * w[o * C + c];
        s += y * dout[n * OC + o];
      }
    }
    return s;
  };
  CpuBackend ctx;
  for (const bool cpu_op : {false, true}) {
    const std::string who = cpu_op ? "cpu " : "ref ";
    std::vector<float> dpre(N * C, 123.0f);
    auto dw = filled(OC * C), db = filled(OC);
    if (cpu_op) {
      cpu::gelu_matmul_backward(ctx, dpre.data(), dw.data(), db.data(), dout.data(), pf.data(),
                                wf.data(), N, C, OC, kind);
    } else {
      ref::gelu_matmul_backward(dpre.data(), dw.data(), db.data(), dout.data(), pf.data(),
                                wf.data(), N, C, OC, kind);
    }
    for (float& d : dpre) d += kG0;  // check_grad compares grad - G0
    check_grad(pre, loss, dpre, who + "dpre");
    check_grad(w, loss, dw, who + "dweight");
    check_grad(b, loss, db, who + "dbias");
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, GeluMatmulGrad,
                         ::testing::Values(MlpActivation::kTanh, MlpActivation::kExact));

TEST(LinearOpsGrad, EncoderResidualDropoutMatchFiniteDifferences) {
  const int B = 2, T = 3, C = 4, V = 3;
  const std::vector<int> inp{0, 2, 2, 1, 0, 2};
  const auto wtef = random_normal(V * C, 1), wpef = random_normal(T * C, 2);
  const auto dout = random_normal(B * T * C, 3);
  auto dwte = filled(V * C), dwpe = filled(T * C);
  ref::encoder_backward(dwte.data(), dwpe.data(), dout.data(), inp.data(), B, T, C);
  Vd wte = to_d(wtef), wpe = to_d(wpef);
  auto enc_loss = [&] {
    double s = 0;
    for (int bt = 0; bt < B * T; ++bt) {
      for (int c = 0; c < C; ++c)
        s += (wte[inp[bt] * C + c] + wpe[(bt % T) * C + c]) * dout[bt * C + c];
    }
    return s;
  };
  check_grad(wte, enc_loss, dwte, "dwte");
  check_grad(wpe, enc_loss, dwpe, "dwpe");

  const int N = 50;
  const float p = 0.4f;
  const auto af = random_normal(N, 4), bf = random_normal(N, 5), d2 = random_normal(N, 6);
  auto da = filled(N), db = filled(N), dd = filled(N);
  ref::residual_backward(da.data(), db.data(), d2.data(), N);
  ref::dropout_backward(dd.data(), d2.data(), N, p, 11);
  Vd a = to_d(af), b = to_d(bf);
  auto res_loss = [&] {
    double s = 0;
    for (int i = 0; i < N; ++i) s += (a[i] + b[i]) * d2[i];
    return s;
  };
  check_grad(a, res_loss, da, "residual da");
  check_grad(b, res_loss, db, "residual db");
  auto drop_loss = [&] {
    double s = 0;
    for (int i = 0; i < N; ++i) s += (hash_uniform(11, i) >= p ? a[i] / (1.0 - p) : 0.0) * d2[i];
    return s;
  };
  check_grad(a, drop_loss, dd, "dropout dinp");
}

}  // namespace
}  // namespace nanogpt
