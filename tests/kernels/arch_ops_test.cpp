// The architecture options' ops: RMSNorm (NormKind::kRmsNorm of the LayerNorm ops), ReLU²
// (MlpActivation::kRelu2), QK-norm, rotary embeddings, the logit soft-cap (ops_arch.h) and the
// encoder without a position embedding. Tier 2: each ref backward against central finite
// differences of a double-precision copy of the forward written here (tolerance and reasoning as
// ref_gradcheck_test.cpp: 1e-5 (1 + |fd|)). Tier 1: the dispatched cpu kernels against the ref on
// every CPU target this machine runs, in float32 and bfloat16.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/check.h"
#include "dispatch_test_util.h"
#include "emulation.h"
#include "finite_differences.h"
#include "kernel_test_util.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu_backend.h"
#include "kernels/ops.h"
#include "kernels/ops_arch.h"
#include "kernels/ops_lowp.h"
#include "lowp_tensor.h"

namespace nanogpt {
namespace {

using testing::check_grad;
using testing::dot;
using testing::expect_within;
using testing::for_each_target;
using testing::Lowp;
using testing::random_normal;
using testing::to_d;
using Vd = std::vector<double>;

// ---- double forward copies ----

Vd rmsnorm_d(const Vd& x, const Vd& w, int N, int C) {
  Vd out(x.size());
  for (int n = 0; n < N; ++n) {
    double ss = 0;
    for (int c = 0; c < C; ++c) ss += x[n * C + c] * x[n * C + c];
    const double r = 1 / std::sqrt(ss / C + 1e-5);
    for (int c = 0; c < C; ++c) out[n * C + c] = x[n * C + c] * r * w[c];
  }
  return out;
}

// QK-norm then rotary (either optional) on qkv (N, 3C), rows at positions n % T.
Vd qk_d(const Vd& qkv, int N, int T, int C, int NH, bool norm, bool rotary, double theta) {
  Vd out = qkv;
  const int HS = C / NH, half = HS / 2;
  for (int n = 0; n < N; ++n) {
    for (int j = 0; j < 2 * NH; ++j) {
      double* v = &out[size_t(n) * 3 * C + size_t(j) * HS];
      if (norm) {
        double ss = 0;
        for (int i = 0; i < HS; ++i) ss += v[i] * v[i];
        const double r = 1 / std::sqrt(ss / HS + 1e-5);
        for (int i = 0; i < HS; ++i) v[i] *= r;
      }
      if (rotary) {
        for (int i = 0; i < half; ++i) {
          const double ang = (n % T) * std::pow(theta, -2.0 * i / HS);
          const double a = v[i], b = v[i + half];
          v[i] = a * std::cos(ang) - b * std::sin(ang);
          v[i + half] = a * std::sin(ang) + b * std::cos(ang);
        }
      }
    }
  }
  return out;
}

// The cos and sin tables (max_T, HS/2) the ops read, as the model makes them.
void rotary_tables(int maxT, int HS, double theta, std::vector<float>& cos, std::vector<float>& sin) {
  const int half = HS / 2;
  cos.resize(size_t(maxT) * half);
  sin.resize(size_t(maxT) * half);
  for (int p = 0; p < maxT; ++p) {
    for (int i = 0; i < half; ++i) {
      const double ang = p * std::pow(theta, -2.0 * i / HS);
      cos[size_t(p) * half + i] = static_cast<float>(std::cos(ang));
      sin[size_t(p) * half + i] = static_cast<float>(std::sin(ang));
    }
  }
}

// ---- tier 2: ref backward vs finite differences ----

TEST(ArchOpsGrad, RmsNormMatchesFiniteDifferences) {
  const int N = 3, C = 7;
  const auto xf = random_normal(N * C, 1), wf = random_normal(C, 2), dout = random_normal(N * C, 4);
  std::vector<float> out(N * C), mean(N, -1.0f), rstd(N);
  ref::layernorm_forward(out.data(), mean.data(), rstd.data(), xf.data(), wf.data(), nullptr, N, C,
                         NormKind::kRmsNorm);
  EXPECT_EQ(mean, std::vector<float>(N, 0.0f)) << "RMSNorm writes mean 0";
  Vd x = to_d(xf), w = to_d(wf);
  const Vd want = rmsnorm_d(x, w, N, C);
  for (int i = 0; i < N * C; ++i) EXPECT_NEAR(out[i], want[i], 1e-6 * (1 + std::fabs(want[i])));
  std::vector<float> dx(N * C, 0.0f), dw(C, 0.0f);
  ref::layernorm_backward(dx.data(), dw.data(), nullptr, dout.data(), xf.data(), wf.data(),
                          mean.data(), rstd.data(), N, C, NormKind::kRmsNorm);
  auto loss = [&] { return dot(rmsnorm_d(x, w, N, C), dout); };
  check_grad(x, loss, dx, "rmsnorm dinp");
  check_grad(w, loss, dw, "rmsnorm dweight");
}

TEST(ArchOpsGrad, Relu2MatchesFiniteDifferences) {
  const int N = 41;
  auto xf = random_normal(N, 1, 2.5f);
  for (float& v : xf) v = std::fabs(v) < 0.01f ? 0.5f : v;  // away from the kink at 0
  const auto dout = random_normal(N, 2);
  std::vector<float> out(N), dx(N, 0.0f);
  ref::gelu_forward(out.data(), xf.data(), N, MlpActivation::kRelu2);
  ref::gelu_backward(dx.data(), xf.data(), dout.data(), N, MlpActivation::kRelu2);
  Vd x = to_d(xf);
  auto relu2 = [](double v) { return v > 0 ? v * v : 0.0; };
  for (int i = 0; i < N; ++i) EXPECT_NEAR(out[i], relu2(x[i]), 1e-6 * (1 + out[i]));
  check_grad(
      x,
      [&] {
        double s = 0;
        for (int i = 0; i < N; ++i) s += relu2(x[i]) * dout[i];
        return s;
      },
      dx, "relu2 dinp");
}

class QkGrad : public ::testing::TestWithParam<std::tuple<bool, bool>> {};

TEST_P(QkGrad, MatchesFiniteDifferences) {
  const auto [norm, rotary] = GetParam();
  const int N = 6, T = 3, C = 8, NH = 2, HS = C / NH;
  const double theta = 100.0;
  std::vector<float> cos, sin;
  rotary_tables(T, HS, theta, cos, sin);
  const auto qkvf = random_normal(size_t(N) * 3 * C, 1), dout = random_normal(size_t(N) * 3 * C, 2);
  std::vector<float> y = qkvf, rstd(size_t(N) * 2 * NH);
  if (norm) ref::qk_rmsnorm_forward(TypedPtr(y.data()), rstd.data(), N, C, NH);
  if (rotary) ref::rotary_forward(TypedPtr(y.data()), cos.data(), sin.data(), N, T, 0, C, NH);
  Vd qkv = to_d(qkvf);
  const Vd want = qk_d(qkv, N, T, C, NH, norm, rotary, theta);
  for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], want[i], 1e-6) << "forward " << i;
  // Backward in place; V's part passes through unchanged. The QK-norm backward reads the output as
  // qkv holds it (rotated), so it runs first, in the rotated frame, then the rotation is undone.
  std::vector<float> g = dout;
  if (norm) {
    ref::qk_rmsnorm_backward(TypedPtr(g.data()), ConstTypedPtr(y.data()), rstd.data(), N, C, NH);
  }
  if (rotary) ref::rotary_backward(TypedPtr(g.data()), cos.data(), sin.data(), N, T, 0, C, NH);
  check_grad(
      qkv, [&] { return dot(qk_d(qkv, N, T, C, NH, norm, rotary, theta), dout); }, g, "dqkv");
}

INSTANTIATE_TEST_SUITE_P(NormRotary, QkGrad,
                         ::testing::Values(std::tuple{true, false}, std::tuple{false, true},
                                           std::tuple{true, true}));

TEST(ArchOpsGrad, SoftcapCrossEntropyMatchesFiniteDifferences) {
  const int N = 4, V = 9, Vp = 16;
  const float cap = 3.0f;
  const auto zf = random_normal(size_t(N) * Vp, 1, 4.0f);
  const std::vector<int> targets = {2, -1, 8, 0};
  std::vector<float> losses(N), d(size_t(N) * Vp);
  const float dloss = 0.7f;
  ref::crossentropy_softcap_forward_backward(losses.data(), d.data(), zf.data(), targets.data(),
                                             dloss, N, V, Vp, cap);
  Vd z = to_d(zf);
  auto loss = [&] {
    double s = 0;
    for (int n = 0; n < N; ++n) {
      if (targets[n] < 0) continue;
      double mx = -1e300, se = 0;
      Vd c(V);
      for (int v = 0; v < V; ++v) c[v] = cap * std::tanh(z[size_t(n) * Vp + v] / cap);
      for (int v = 0; v < V; ++v) mx = std::max(mx, c[v]);
      for (int v = 0; v < V; ++v) se += std::exp(c[v] - mx);
      s += dloss * (mx + std::log(se) - c[targets[n]]);
    }
    return s;
  };
  check_grad(z, loss, d, "softcap dlogits");
  // The capped forward: tanh's range, and the loss of the capped logits.
  std::vector<float> capped = zf;
  ref::softcap_forward(capped.data(), N * Vp, cap);
  for (float v : capped) EXPECT_LT(std::fabs(v), cap);
  std::vector<float> want(N);
  ref::crossentropy_forward(want.data(), capped.data(), targets.data(), N, V, Vp);
  EXPECT_EQ(losses, want);
}

TEST(ArchOpsGrad, EncoderWithoutPositionEmbedding) {
  const int B = 2, T = 3, C = 4, V = 5;
  const auto wte = random_normal(size_t(V) * C, 1), dout = random_normal(size_t(B) * T * C, 2);
  const std::vector<int> inp = {0, 4, 4, 2, 1, 0};
  std::vector<float> out(size_t(B) * T * C), dwte(wte.size(), 0.0f);
  ref::encoder_forward(out.data(), inp.data(), wte.data(), nullptr, B, T, C);
  ref::encoder_backward(dwte.data(), nullptr, dout.data(), inp.data(), B, T, C);
  std::vector<float> want_dwte(wte.size(), 0.0f);
  for (int i = 0; i < B * T; ++i) {
    for (int c = 0; c < C; ++c) {
      EXPECT_EQ(out[size_t(i) * C + c], wte[size_t(inp[i]) * C + c]);
      want_dwte[size_t(inp[i]) * C + c] += dout[size_t(i) * C + c];
    }
  }
  EXPECT_EQ(dwte, want_dwte);
  for_each_target([&](const std::string& target) {
    std::vector<float> o(out.size(), -1.0f), dw(wte.size(), 0.0f);
    cpu::encoder_forward(o.data(), inp.data(), wte.data(), nullptr, B, T, C);
    cpu::encoder_backward(dw.data(), nullptr, dout.data(), inp.data(), B, T, C);
    EXPECT_EQ(o, out) << target;
    EXPECT_EQ(dw, dwte) << target;
  });
}

// ---- tier 1: the dispatched kernels against the ref ----

TEST(ArchOpsCpu, RmsNormMatchesTheReferenceOnEveryTarget) {
  const int64_t N = 37;
  const int C = 96;
  const auto x = random_normal(N * C, 1), w = random_normal(C, 2), dout = random_normal(N * C, 3);
  std::vector<float> want(N * C), mean(N), rstd(N), want_dx(N * C, 0.5f), want_dw(C, 0.5f);
  ref::layernorm_forward(want.data(), mean.data(), rstd.data(), x.data(), w.data(), nullptr, N, C,
                         NormKind::kRmsNorm);
  ref::layernorm_backward(want_dx.data(), want_dw.data(), nullptr, dout.data(), x.data(), w.data(),
                          mean.data(), rstd.data(), N, C, NormKind::kRmsNorm);
  for_each_target([&](const std::string& target) {
    std::vector<float> out(N * C), m(N, -1.0f), r(N), dx(N * C, 0.5f), dw(C, 0.5f);
    cpu::layernorm_forward(out.data(), m.data(), r.data(), x.data(), w.data(), nullptr, N, C,
                           NormKind::kRmsNorm);
    EXPECT_EQ(m, std::vector<float>(N, 0.0f)) << target;
    expect_within(out, want, 1e-5, target + " rmsnorm out");
    expect_within(r, rstd, 1e-5, target + " rmsnorm rstd");
    cpu::layernorm_backward(dx.data(), dw.data(), nullptr, dout.data(), x.data(), w.data(), m.data(),
                            r.data(), N, C, NormKind::kRmsNorm);
    expect_within(dx, want_dx, 1e-5, target + " rmsnorm dinp");
    expect_within(dw, want_dw, 1e-4, target + " rmsnorm dweight");
    // The fused residual form gives the plain form's bits.
    const auto a = random_normal(N * C, 7);
    std::vector<float> b(N * C), res(N * C), o2(N * C), m2(N), r2(N), sum(N * C);
    for (int64_t i = 0; i < N * C; ++i) {
      b[i] = x[i] - a[i];
      sum[i] = a[i] + b[i];
    }
    cpu::residual_layernorm_forward(res.data(), o2.data(), m2.data(), r2.data(), a.data(), b.data(),
                                    w.data(), nullptr, N, C, NormKind::kRmsNorm);
    std::vector<float> o3(N * C), m3(N), r3(N);
    cpu::layernorm_forward(o3.data(), m3.data(), r3.data(), sum.data(), w.data(), nullptr, N, C,
                           NormKind::kRmsNorm);
    EXPECT_EQ(o2, o3) << target;
    EXPECT_EQ(r2, r3) << target;
  });
}

TEST(ArchOpsCpu, Relu2MatchesTheReferenceOnEveryTarget) {
  const int64_t N = 5000;
  const auto x = random_normal(N, 1, 2.0f), dout = random_normal(N, 2);
  std::vector<float> want(N), want_dx(N, 0.25f);
  ref::gelu_forward(want.data(), x.data(), N, MlpActivation::kRelu2);
  ref::gelu_backward(want_dx.data(), x.data(), dout.data(), N, MlpActivation::kRelu2);
  for_each_target([&](const std::string& target) {
    std::vector<float> out(N), dx(N, 0.25f);
    cpu::gelu_forward(out.data(), x.data(), N, MlpActivation::kRelu2);
    cpu::gelu_backward(dx.data(), x.data(), dout.data(), N, MlpActivation::kRelu2);
    expect_within(out, want, 1e-6 * 16, target + " relu2");
    expect_within(dx, want_dx, 1e-5, target + " relu2 dinp");
    // bf16 (the lookup tables) against the ref's widen-compute-round definition.
    CpuBackend ctx;
    Lowp xb(x, DType::kBF16), ob(N, DType::kBF16), want_b(N, DType::kBF16);
    cpu::gelu_forward(ctx, ob.ptr(), xb.ptr(), N, MlpActivation::kRelu2);
    ref::gelu_forward(want_b.ptr(), xb.ptr(), N, MlpActivation::kRelu2);
    EXPECT_TRUE(ob == want_b) << target << " bf16 relu2";
  });
}

// (n_embd, n_head): heads of 16 (the per-head loops on every target), 32 and 64 (the row-wise
// path where a head's halves are whole vectors: AVX-512 and narrower).
constexpr std::pair<int, int> kQkShapes[] = {{48, 3}, {128, 4}, {128, 2}};

class QkCpu : public ::testing::TestWithParam<DType> {};

TEST_P(QkCpu, NormAndRotaryMatchTheReferenceOnEveryTarget) {
  const DType dtype = GetParam();
  const int64_t N = 24;
  for (const auto& [c, nh] : kQkShapes) {
    const int T = 8, C = c, NH = nh, HS = C / NH;
    const std::string shape = fmt::format(" HS {}", HS);
    std::vector<float> cos, sin;
    rotary_tables(T + 5, HS, 10000.0, cos, sin);
    const auto qkv0 = random_normal(size_t(N) * 3 * C, 1),
               dout = random_normal(size_t(N) * 3 * C, 2);
    // ref: forward norm then rotary (pos0 5); backward norm (in the rotated frame) then rotary.
    Lowp want(qkv0, dtype), want_g(dout, dtype);
    std::vector<float> want_rstd(size_t(N) * 2 * NH);
    ref::qk_rmsnorm_forward(want.ptr(), want_rstd.data(), N, C, NH);
    ref::rotary_forward(want.ptr(), cos.data(), sin.data(), N, T, 5, C, NH);
    ref::qk_rmsnorm_backward(want_g.ptr(), want.ptr(), want_rstd.data(), N, C, NH);
    ref::rotary_backward(want_g.ptr(), cos.data(), sin.data(), N, T, 5, C, NH);
    // float32: a few float roundings apart; 16 bits: at most a unit of the last place apart.
    const double tol = dtype == DType::kF32 ? 2e-6 : 2 * testing::unit_roundoff(dtype) * 8;
    for_each_target([&](const std::string& target) {
      for (int threads : {1, 2}) {
        testing::ScopedOmpThreads omp(threads);
        Lowp y(qkv0, dtype), g(dout, dtype);
        std::vector<float> rstd(want_rstd.size());
        cpu::qk_rmsnorm_forward(y.ptr(), rstd.data(), N, C, NH);
        cpu::rotary_forward(y.ptr(), cos.data(), sin.data(), N, T, 5, C, NH);
        cpu::qk_rmsnorm_backward(g.ptr(), want.ptr(), want_rstd.data(), N, C, NH);
        cpu::rotary_backward(g.ptr(), cos.data(), sin.data(), N, T, 5, C, NH);
        expect_within(rstd, want_rstd, 1e-5, target + shape + " rstd");
        expect_within(y.values(), want.values(), tol, target + shape + " forward");
        expect_within(g.values(), want_g.values(), tol * 4, target + shape + " backward");
      }
    });
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, QkCpu, ::testing::Values(DType::kF32, DType::kBF16));

// The fused pass (qk_norm_rotary_forward / _backward; either half skipped by a null pointer; with
// the norm, Q's heads times q_gain, 1 or 2.5): the ref against the double forward and finite
// differences; the cpu kernel against the fused ref on every target (float32 and bf16, 1 and 2
// threads) and, in float32 at gain 1, bit for bit against the two cpu ops it replaces.
class QkFused : public ::testing::TestWithParam<std::tuple<DType, bool, bool, float>> {};

// Rows of the fused pass's tests: 24 natively, 10 under emulation (tests/emulation.h), where the
// float64 finite differences (rows^2 of work: 3 shapes x 16 cases took 56-180 s a case under
// qemu's SVE on an Intel host) dominate. Both take the same kernel paths: the path is chosen by
// the head size (whole-vector halves, kQkShapes, unchanged) and never by the row count, the rows
// still wrap past T (positions pos0 + n % T, so the rotary tables' rows repeat; 10 rows end in a
// partial window, which 24 do not), and both counts
// stay below the parallel threshold, so 1 and 2 threads run the same serial loop either way.
int64_t qk_fused_rows() { return testing::running_emulated() ? 10 : 24; }

TEST(QkFusedRows, EmulatedRowsKeepThePaths) {
  constexpr int kT = 8;
  for (const int64_t N : {int64_t{24}, int64_t{10}}) {
    EXPECT_GT(N, kT) << "rows must wrap past T";
    for (const auto& shape : kQkShapes) {
      const int C = shape.first;
      EXPECT_FALSE(cpu::worth_parallel(2 * N * C)) << "C " << C;
      EXPECT_FALSE(cpu::worth_parallel(4 * N * C)) << "C " << C;
    }
  }
  EXPECT_EQ(qk_fused_rows(), testing::running_emulated() ? 10 : 24);
}

TEST_P(QkFused, MatchesTheReferenceTheOpsItFusesAndFiniteDifferences) {
  const auto [dtype, norm, rotary, gain] = GetParam();
  const int64_t N = qk_fused_rows();
  for (const auto& [c, nh] : kQkShapes) {
    const int T = 8, C = c, NH = nh, HS = C / NH, pos0 = 5;
    const std::string shape = fmt::format(" HS {}", HS);
    const double theta = 10000.0;
    std::vector<float> cos, sin;
    rotary_tables(T + pos0, HS, theta, cos, sin);
    const float* cp = rotary ? cos.data() : nullptr;
    const float* sp = rotary ? sin.data() : nullptr;
    const auto qkv0 = random_normal(size_t(N) * 3 * C, 1),
               dout = random_normal(size_t(N) * 3 * C, 2);
    Lowp want(qkv0, dtype), want_g(dout, dtype);
    std::vector<float> want_rstd(size_t(N) * 2 * NH, -1.0f);
    float* want_r = norm ? want_rstd.data() : nullptr;
    ref::qk_norm_rotary_forward(want.ptr(), want_r, cp, sp, N, T, pos0, C, NH, gain);
    ref::qk_norm_rotary_backward(want_g.ptr(), want.ptr(), want_r, cp, sp, N, T, pos0, C, NH, gain);
    if (dtype == DType::kF32) {
      // The ref against the double forward (rows at positions pos0 + n % T) and its gradient.
      Vd qkv = to_d(qkv0);
      auto forward_d = [&] {
        Vd out = qkv;
        const int half = HS / 2;
        for (int64_t n = 0; n < N; ++n) {
          for (int j = 0; j < 2 * NH; ++j) {
            double* v = &out[size_t(n) * 3 * C + size_t(j) * HS];
            if (norm) {
              double ss = 0;
              for (int i = 0; i < HS; ++i) ss += v[i] * v[i];
              const double g = j < NH ? double{gain} : 1.0;  // Q's heads first
              for (int i = 0; i < HS; ++i) v[i] *= g / std::sqrt(ss / HS + 1e-5);
            }
            if (rotary) {
              const int64_t p = pos0 + n % T;
              for (int i = 0; i < half; ++i) {
                const double c = cos[p * half + i], s = sin[p * half + i], a = v[i],
                             b = v[i + half];
                v[i] = a * c - b * s;
                v[i + half] = a * s + b * c;
              }
            }
          }
        }
        return out;
      };
      const Vd y = forward_d();
      for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(want.values()[i], y[i], 1e-6) << i;
      check_grad(
          qkv, [&] { return dot(forward_d(), dout); }, want_g.values(), "fused dqkv" + shape);
    }
    const double tol = dtype == DType::kF32 ? 2e-6 : 2 * testing::unit_roundoff(dtype) * 8;
    for_each_target([&](const std::string& target) {
      for (int threads : {1, 2}) {
        testing::ScopedOmpThreads omp(threads);
        Lowp y(qkv0, dtype), g(dout, dtype);
        std::vector<float> rstd(want_rstd.size(), -1.0f);
        float* r = norm ? rstd.data() : nullptr;
        cpu::qk_norm_rotary_forward(y.ptr(), r, cp, sp, N, T, pos0, C, NH, gain);
        cpu::qk_norm_rotary_backward(g.ptr(), want.ptr(), want_r, cp, sp, N, T, pos0, C, NH, gain);
        expect_within(rstd, want_rstd, 1e-5, target + shape + " rstd");
        expect_within(y.values(), want.values(), tol, target + shape + " forward");
        expect_within(g.values(), want_g.values(), tol * 4, target + shape + " backward");
        if (dtype != DType::kF32 || gain != 1.0f) continue;
        // float32: the same bits as the two ops one after the other.
        std::vector<float> y2 = qkv0, g2 = dout, rstd2(want_rstd.size(), -1.0f);
        if (norm) cpu::qk_rmsnorm_forward(TypedPtr(y2.data()), rstd2.data(), N, C, NH);
        if (rotary) cpu::rotary_forward(TypedPtr(y2.data()), cp, sp, N, T, pos0, C, NH);
        if (norm) {
          cpu::qk_rmsnorm_backward(TypedPtr(g2.data()), ConstTypedPtr(want.values().data()),
                                   want_rstd.data(), N, C, NH);
        }
        if (rotary) cpu::rotary_backward(TypedPtr(g2.data()), cp, sp, N, T, pos0, C, NH);
        EXPECT_EQ(y.values(), y2) << target << shape << " forward bits";
        EXPECT_EQ(g.values(), g2) << target << shape << " backward bits";
        EXPECT_EQ(rstd, rstd2) << target << shape << " rstd bits";
      }
    });
  }
}

INSTANTIATE_TEST_SUITE_P(
    DtypesNormRotary, QkFused,
    ::testing::Combine(::testing::Values(DType::kF32, DType::kBF16), ::testing::Bool(),
                       ::testing::Bool(), ::testing::Values(1.0f, 2.5f)),
    [](const auto& info) {
      return std::string(std::get<0>(info.param) == DType::kF32 ? "f32" : "bf16") +
             (std::get<1>(info.param) ? "_norm" : "") + (std::get<2>(info.param) ? "_rotary" : "") +
             (!std::get<1>(info.param) && !std::get<2>(info.param) ? "_neither" : "") +
             (std::get<3>(info.param) != 1.0f ? "_gain" : "");
    });

TEST(ArchOpsCpu, SoftcapMatchesTheReferenceOnEveryTarget) {
  const int64_t N = 19;
  const int V = 67, Vp = 128;
  const float cap = 15.0f;
  const auto z = random_normal(size_t(N) * Vp, 1, 10.0f);
  std::vector<int> targets(N);
  for (int64_t n = 0; n < N; ++n) targets[n] = n % 5 == 3 ? -1 : static_cast<int>(n * 7 % V);
  std::vector<float> want_c = z, want_l(N), want_d(z.size());
  ref::softcap_forward(want_c.data(), N * Vp, cap);
  ref::crossentropy_softcap_forward_backward(want_l.data(), want_d.data(), z.data(), targets.data(),
                                             0.1f, N, V, Vp, cap);
  for_each_target([&](const std::string& target) {
    std::vector<float> c = z, l(N), d = z;  // d aliases the logits, as in the model
    cpu::softcap_forward(c.data(), N * Vp, cap);
    cpu::crossentropy_softcap_forward_backward(l.data(), d.data(), d.data(), targets.data(), 0.1f,
                                               N, V, Vp, cap);
    expect_within(c, want_c, 1e-5 * cap, target + " capped");
    expect_within(l, want_l, 1e-5, target + " losses");
    expect_within(d, want_d, 1e-6, target + " dlogits");
  });
}

// A target outside [0, V) (here a padded column) is an error naming its row, before any row is
// touched (the soft-capped head checks all rows once, then runs the rows without the float32
// kernel's per-call check).
TEST(ArchOpsCpu, SoftcapCrossEntropyRejectsTargetOutsideVocab) {
  const int64_t N = 3;
  const int V = 10, Vp = 16;
  const std::vector<float> z(size_t(N) * Vp, 1.0f);
  const std::vector<int> targets{3, -1, 13};
  std::vector<float> l(N, -7.0f), d = z;
  try {
    cpu::crossentropy_softcap_forward_backward(l.data(), d.data(), d.data(), targets.data(), 0.1f,
                                               N, V, Vp, 15.0f);
    FAIL() << "expected an error for target 13 >= V = 10";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("targets[2] = 13"), std::string::npos) << e.what();
  }
  EXPECT_EQ(d, z) << "nothing written before the check";
  EXPECT_EQ(l, std::vector<float>(N, -7.0f));
}

}  // namespace
}  // namespace nanogpt
