// Mixed-precision kernels (kernels/ops_lowp.h): conversions bit-exact against core/float16.h's
// scalar definitions; cpu bf16/fp16 matmuls, LayerNorm, GELU and attention against the ref ops
// with tolerances derived from the unit roundoff u of the storage type (bf16 2^-8, fp16 2^-11)
// and of float32 (2^-24) and from the reduction length K.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <tuple>

#include "core/float16.h"
#include "dispatch_test_util.h"
#include "kernel_test_util.h"
#include "kernels/cpu_backend.h"
#include "kernels/cpu/attention_bf16.h"
#include "kernels/cpu/context_impl.h"
#include "kernels/ops_lowp.h"
#include "lowp_tensor.h"

namespace nanogpt {
namespace {

using testing::expect_within;
using testing::Lowp;
using testing::random_normal;
using testing::tiny;
using testing::unit_roundoff;

// Two values a, b (float) each rounded once to t are at most |a - b| + u (|a| + |b|) apart (plus
// the subnormal step): the tolerance between an op's cpu and ref results once both are rounded.
std::vector<double> rounded_tolerance(const std::vector<float>& a, const std::vector<float>& b,
                                      DType t) {
  std::vector<double> tol(a.size());
  const double u = unit_roundoff(t);
  for (size_t i = 0; i < a.size(); ++i) {
    tol[i] = std::fabs(double(a[i]) - b[i]) + u * (std::fabs(a[i]) + std::fabs(b[i])) +
             2 * tiny(t) + 1e-30;
  }
  return tol;
}

// The float32 results of cpu and ref must agree far below the storage precision: within u_t times
// the largest magnitude (else the op is wrong, not merely rounded differently).
void expect_float_agreement(const std::vector<float>& a, const std::vector<float>& b, DType t,
                            const std::string& what) {
  double mx = 0;
  for (float x : b) mx = std::max(mx, double(std::fabs(x)));
  expect_within(a, b, unit_roundoff(t) * mx + 1e-30, what + " (float32 forms)");
}

// ---------------------------------------------------------------- conversions

std::vector<float> special_and_random_values() {
  std::vector<float> v = {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65519.0f, 65520.0f, 1e6f,
                          std::ldexp(1.0f, -14), std::ldexp(1.0f, -24), std::ldexp(1.0f, -25),
                          std::ldexp(1.5f, -25), std::ldexp(1.0f, -26), 1e-40f, -3e-39f,
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(), 3.0e38f, 1.00390625f,
                          1.005859375f, 1.0009765625f, 1.00146484375f};
  Rng rng(11);
  for (int i = 0; i < 20000; ++i) {  // random signs, mantissas and exponents 2^-30 .. 2^20
    v.push_back(static_cast<float>((rng.uniform() - 0.5) * std::ldexp(1.0, int(rng.uniform() * 50) - 30)));
  }
  return v;
}

class ConvertTest : public ::testing::TestWithParam<DType> {};

// On every CPU target this machine can run (dispatch_test_util.h).
TEST_P(ConvertTest, CpuEqualsScalarDefinitionAndRoundsWithinUnitRoundoff) {
  testing::for_each_target([&](const std::string&) {
    const DType t = GetParam();
    auto v = special_and_random_values();
    v.push_back(std::numeric_limits<float>::quiet_NaN());
    const size_t n = v.size();
    std::vector<uint16_t> got(n), want(n);
    cpu::convert(TypedPtr(got.data(), t), v.data(), int64_t(n));
    ref::convert(TypedPtr(want.data(), t), v.data(), int64_t(n));
    for (size_t i = 0; i < n; ++i) {
      const uint16_t scalar = t == DType::kBF16 ? float_to_bf16(v[i]) : float_to_fp16(v[i]);
      ASSERT_EQ(want[i], scalar) << "ref at " << v[i];
      if (std::isnan(v[i])) {
        const float back = t == DType::kBF16 ? bf16_to_float(got[i]) : fp16_to_float(got[i]);
        EXPECT_TRUE(std::isnan(back)) << "nan must stay nan";
        continue;
      }
      ASSERT_EQ(got[i], want[i]) << "cpu narrow at " << v[i] << " (index " << i << ")";
    }
    // Widening: exact, and cpu equals scalar.
    std::vector<float> wide(n), wide_r(n);
    cpu::convert(wide.data(), ConstTypedPtr(got.data(), t), int64_t(n));
    ref::convert(wide_r.data(), ConstTypedPtr(got.data(), t), int64_t(n));
    const double u = unit_roundoff(t);
    // Values from the largest finite plus half its ulp (2^(emax - p)) up round to inf.
    const double overflow_at = t == DType::kBF16 ? 3.3895313892515355e38 + std::ldexp(1.0, 119)
                                                 : 65504.0 + 16.0;
    for (size_t i = 0; i < n; ++i) {
      if (std::isnan(v[i])) continue;
      ASSERT_EQ(std::memcmp(&wide[i], &wide_r[i], 4), 0) << "widen at " << i;
      const double x = v[i], r = wide[i];
      if (std::isinf(x) || std::fabs(x) >= overflow_at) {
        EXPECT_TRUE(std::isinf(r) && (r > 0) == (x > 0)) << x << " must overflow to inf";
      } else {
        EXPECT_LE(std::fabs(r - x), u * std::fabs(x) + tiny(t)) << "rounding of " << x;
      }
    }
  });
}

// fill_zero zeroes exactly its n elements of any dtype, on sizes around its 1 MiB parallel pieces
// (the bytes after them stay as they were), as the scalar definition does.
TEST(FillZeroTest, ZeroesExactlyNElementsOfEveryDtype) {
  for (DType t : {DType::kF32, DType::kBF16, DType::kF16}) {
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{1000}, int64_t{(1 << 20) / 2 + 7},
                      int64_t{3 << 20}}) {
      const size_t bytes = static_cast<size_t>(n) * dtype_size(t);
      std::vector<unsigned char> buf(bytes + 64, 0xAB), buf_r(buf.size(), 0xAB);
      cpu::fill_zero(TypedPtr(buf.data(), t), n);
      ref::fill_zero(TypedPtr(buf_r.data(), t), n);
      EXPECT_EQ(buf, buf_r) << dtype_name(t) << " n=" << n;
      EXPECT_EQ(std::count(buf.begin(), buf.begin() + bytes, 0), static_cast<long>(bytes));
      EXPECT_EQ(std::count(buf.begin() + bytes, buf.end(), 0xAB), 64);
    }
  }
}

TEST(ConvertTest, Fp16EdgeCases) {
  EXPECT_EQ(float_to_fp16(65504.0f), 0x7BFF);
  EXPECT_EQ(float_to_fp16(65520.0f), 0x7C00);  // the tie rounds to even: inf
  EXPECT_EQ(float_to_fp16(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(float_to_fp16(std::ldexp(1.0f, -25)), 0x0000);  // tie to even: 0
  EXPECT_EQ(float_to_fp16(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(float_to_fp16(-std::ldexp(1.0f, -14)), 0x8400);
  EXPECT_EQ(float_to_bf16(1.00390625f), 0x3F80);  // 1 + 2^-8: tie, to even
  EXPECT_EQ(float_to_bf16(1.005859375f), 0x3F81);
}

INSTANTIATE_TEST_SUITE_P(Types, ConvertTest, ::testing::Values(DType::kBF16, DType::kF16),
                         [](const auto& i) { return std::string(dtype_name(i.param)); });

// ---------------------------------------------------------------- matmul

// Bound on |cpu - ref| for an output computed from the same (rounded) inputs: the cpu's float sum
// of K products (each exact in float for 16-bit inputs) is within K u32 S of the exact sum, where
// S = sum |a_k b_k| (+ |bias| + |old|), the ref's double sum is exact to far below that, and each
// side rounds once to the output type (u_out (|exact| + K u32 S) each).
std::vector<double> matmul_tolerance(const std::vector<float>& S, const std::vector<float>& ref,
                                     int64_t K, DType out) {
  const double e = double(K + 2) * kUnitRoundoffF32, uo = unit_roundoff(out);
  std::vector<double> tol(S.size());
  for (size_t i = 0; i < S.size(); ++i) {
    tol[i] = e * S[i] + 2 * uo * (std::fabs(ref[i]) + e * S[i]) + 2 * tiny(out) + 1e-30;
  }
  return tol;
}

std::vector<float> abs_values(const std::vector<float>& v) { return testing::abs_of(v); }

class LowpMatmulTest : public ::testing::TestWithParam<std::tuple<DType, int, int, int, bool>> {};

TEST_P(LowpMatmulTest, ForwardAndBackwardMatchReference) {
  const auto [t, N, C, OC, round_out] = GetParam();
  CpuBackend ctx;
  Lowp inp(random_normal(size_t(N) * C, 1), t), w(random_normal(size_t(OC) * C, 2, 0.2f), t);
  const auto b = random_normal(OC, 3);
  const DType ot = round_out ? t : DType::kF32;

  // Forward: out in float32 or in t.
  Lowp out(std::vector<float>(size_t(N) * OC), ot), out_r(std::vector<float>(size_t(N) * OC), ot);
  cpu::matmul_forward(ctx, out.ptr(), inp.ptr(), w.ptr(), b.data(), N, C, OC);
  ref::matmul_forward(out_r.ptr(), inp.ptr(), w.ptr(), b.data(), N, C, OC);
  std::vector<float> S(size_t(N) * OC);
  const auto ai = abs_values(inp.f32), aw = abs_values(w.f32), ab = abs_values(b);
  ref::matmul_forward(S.data(), ai.data(), aw.data(), ab.data(), N, C, OC);
  expect_within(out.values(), out_r.values(), matmul_tolerance(S, out_r.values(), C + 1, ot),
                "out vs ref");

  // Against float32 math on the unrounded inputs: rounding each input costs (2u + u^2) S more.
  {
    const auto x32 = random_normal(size_t(N) * C, 1), w32 = random_normal(size_t(OC) * C, 2, 0.2f);
    std::vector<float> exact(size_t(N) * OC);
    ref::matmul_forward(exact.data(), x32.data(), w32.data(), b.data(), N, C, OC);
    const double u = unit_roundoff(t);
    auto tol = matmul_tolerance(S, exact, C + 1, ot);
    for (size_t i = 0; i < tol.size(); ++i) tol[i] += (2 * u + u * u) * S[i] * (1 + u);
    expect_within(out.values(), exact, tol, "out vs float32 inputs");
  }

  // Backward, accumulating into nonzero gradients: dinp in t, dweight and dbias float32.
  Lowp dout(random_normal(size_t(N) * OC, 4), t);
  Lowp dinp(random_normal(size_t(N) * C, 5), t), dinp_r = dinp;
  const auto dw0 = random_normal(size_t(OC) * C, 6), db0 = random_normal(OC, 7);
  auto dw = dw0, db = db0, dw_r = dw0, db_r = db0;
  cpu::matmul_backward(ctx, dinp.ptr(), dw.data(), db.data(), dout.ptr(), inp.ptr(), w.ptr(), N,
                       C, OC);
  ref::matmul_backward(dinp_r.ptr(), dw_r.data(), db_r.data(), dout.ptr(), inp.ptr(), w.ptr(), N,
                       C, OC);
  const auto ad = abs_values(dout.f32);
  std::vector<float> Sdi = abs_values(dinp.f32), Sdw = abs_values(dw0), Sdb = abs_values(db0);
  {
    std::vector<float> zero_c(size_t(N) * C, 0.0f), zero_w(size_t(OC) * C, 0.0f), zero_b(OC, 0.0f);
    ref::matmul_backward(zero_c.data(), zero_w.data(), zero_b.data(), ad.data(), ai.data(),
                         aw.data(), N, C, OC);
    const auto old = Lowp(random_normal(size_t(N) * C, 5), t).f32;
    for (size_t i = 0; i < Sdi.size(); ++i) Sdi[i] = std::fabs(old[i]) + zero_c[i];
    for (size_t i = 0; i < Sdw.size(); ++i) Sdw[i] += zero_w[i];
    for (int o = 0; o < OC; ++o) Sdb[o] += zero_b[o];
  }
  expect_within(dinp.values(), dinp_r.values(), matmul_tolerance(Sdi, dinp_r.values(), OC + 1, t),
                "dinp");
  expect_within(dw, dw_r, matmul_tolerance(Sdw, dw_r, N + 1, DType::kF32), "dweight");
  expect_within(db, db_r, matmul_tolerance(Sdb, db_r, N + 1, DType::kF32), "dbias");

  // dinp overwritten (a buffer of garbage before): the values of the ref into a zeroed dinp.
  {
    Lowp dinp_set(random_normal(size_t(N) * C, 8), t), dinp_z(size_t(N) * C, t);
    auto dw3 = dw0, db3 = db0;
    cpu::matmul_backward_overwrite(ctx, dinp_set.ptr(), dw3.data(), db3.data(), dout.ptr(),
                                   inp.ptr(), w.ptr(), N, C, OC);
    ref::matmul_backward(dinp_z.ptr(), nullptr, nullptr, dout.ptr(), inp.ptr(), w.ptr(), N, C, OC);
    std::vector<float> Sz(size_t(N) * C, 0.0f), unused_w(size_t(OC) * C), unused_b(OC);
    ref::matmul_backward(Sz.data(), unused_w.data(), unused_b.data(), ad.data(), ai.data(),
                         aw.data(), N, C, OC);
    expect_within(dinp_set.values(), dinp_z.values(),
                  matmul_tolerance(Sz, dinp_z.values(), OC + 1, t), "dinp (overwritten)");
    expect_within(dw3, dw_r, matmul_tolerance(Sdw, dw_r, N + 1, DType::kF32),
                  "dweight (overwrite)");
    expect_within(db3, db_r, matmul_tolerance(Sdb, db_r, N + 1, DType::kF32), "dbias (overwrite)");
  }

  // dinp null: only the parameter gradients.
  auto dw2 = dw0;
  cpu::matmul_backward(ctx, TypedPtr(), dw2.data(), nullptr, dout.ptr(), inp.ptr(), w.ptr(), N, C,
                       OC);
  expect_within(dw2, dw_r, matmul_tolerance(Sdw, dw_r, N + 1, DType::kF32), "dweight (no dinp)");
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, LowpMatmulTest,
    ::testing::Combine(::testing::Values(DType::kBF16, DType::kF16), ::testing::Values(1, 37, 128),
                       ::testing::Values(16, 96), ::testing::Values(48, 130),
                       ::testing::Bool()));
// bf16 products of kPackWeightsMinRows rows or more run on weights reordered into oneDNN's blocked
// layout (forward and backward-data); the same checks on that path, with ragged sizes.
INSTANTIATE_TEST_SUITE_P(PackedWeights, LowpMatmulTest,
                         ::testing::Combine(::testing::Values(DType::kBF16),
                                            ::testing::Values(int(kPackWeightsMinRows) + 6),
                                            ::testing::Values(16, 96), ::testing::Values(48, 130),
                                            ::testing::Bool()));

// ---------------------------------------------------------------- elementwise and attention

class LowpOpsTest : public ::testing::TestWithParam<DType> {};

TEST_P(LowpOpsTest, LayerNormForwardAndBackward) {
  const DType t = GetParam();
  CpuBackend ctx;
  const int N = 37, C = 96;
  const auto x = random_normal(size_t(N) * C, 1, 2.0f), w = random_normal(C, 2), b = random_normal(C, 3);
  // Float32 forms (output float32, same inputs) and the rounded outputs.
  std::vector<float> o32(size_t(N) * C), o32_r(o32.size()), m(N), r(N), m_r(N), r_r(N);
  cpu::layernorm_forward(ctx, TypedPtr(o32.data()), m.data(), r.data(), x.data(), w.data(), b.data(), N, C);
  ref::layernorm_forward(TypedPtr(o32_r.data()), m_r.data(), r_r.data(), x.data(), w.data(), b.data(), N, C);
  expect_float_agreement(o32, o32_r, t, "layernorm out");
  Lowp out(o32, t), out_r(o32, t);
  cpu::layernorm_forward(ctx, out.ptr(), m.data(), r.data(), x.data(), w.data(), b.data(), N, C);
  ref::layernorm_forward(out_r.ptr(), m_r.data(), r_r.data(), x.data(), w.data(), b.data(), N, C);
  EXPECT_EQ(out.bits, Lowp(o32, t).bits) << "cpu output must be its float32 form rounded once";
  expect_within(out.values(), out_r.values(), rounded_tolerance(o32, o32_r, t), "layernorm out");

  // Backward with a low-precision dout: the same float32 op on the widened dout.
  Lowp dout(random_normal(size_t(N) * C, 4), t);
  std::vector<float> di(size_t(N) * C, 0.5f), dw(C, 0.25f), db(C, -0.5f);
  auto di_r = di, dw_r = dw, db_r = db, di_w = di, dw_w = dw, db_w = db;
  cpu::layernorm_backward(ctx, di.data(), dw.data(), db.data(), dout.ptr(), x.data(), w.data(), m.data(), r.data(), N, C);
  ref::layernorm_backward(di_r.data(), dw_r.data(), db_r.data(), dout.ptr(), x.data(), w.data(), m_r.data(), r_r.data(), N, C);
  cpu::layernorm_backward(di_w.data(), dw_w.data(), db_w.data(), dout.f32.data(), x.data(), w.data(), m.data(), r.data(), N, C);
  expect_float_agreement(di, di_r, t, "layernorm dinp");
  expect_float_agreement(dw, dw_r, t, "layernorm dweight");
  expect_float_agreement(db, db_r, t, "layernorm dbias");
  expect_within(di, di_w, 0.0, "dinp equals the float32 kernel on widened dout");
}

// fused=True in 16-bit runs: the residual add (float32) and the LayerNorm with a 16-bit output in
// one pass equal residual_forward then the 16-bit layernorm_forward bit for bit (the same float
// row, rounded once), and the ref composition within the rounding tolerance; with a branch weight,
// skip_forward then layernorm_forward.
TEST_P(LowpOpsTest, ResidualLayerNormFusedEqualsUnfused) {
  const DType t = GetParam();
  CpuBackend ctx;
  const int N = 37, C = 96;
  const auto a = random_normal(size_t(N) * C, 8, 2.0f), b = random_normal(size_t(N) * C, 9);
  const auto w = random_normal(C, 2), bi = random_normal(C, 3);
  for (const float* bias : {bi.data(), static_cast<const float*>(nullptr)}) {
    std::vector<float> res(size_t(N) * C), m(N), r(N), res_u(res.size()), m_u(N), r_u(N);
    Lowp out(std::vector<float>(res.size()), t), out_u(std::vector<float>(res.size()), t);
    cpu::residual_layernorm_forward(ctx, res.data(), out.ptr(), m.data(), r.data(), a.data(),
                                    b.data(), w.data(), bias, N, C);
    cpu::residual_forward(res_u.data(), a.data(), b.data(), int64_t{N} * C);
    cpu::layernorm_forward(ctx, out_u.ptr(), m_u.data(), r_u.data(), res_u.data(), w.data(), bias,
                           N, C);
    EXPECT_EQ(res, res_u);
    EXPECT_EQ(out.bits, out_u.bits);
    EXPECT_EQ(m, m_u);
    EXPECT_EQ(r, r_u);
    // Against the definition: ref residual add, ref LayerNorm in float32, rounded once.
    std::vector<float> res_r(res.size()), o32_r(res.size()), o32(res.size()), m_r(N), r_r(N);
    ref::residual_forward(res_r.data(), a.data(), b.data(), int64_t{N} * C);
    ref::layernorm_forward(o32_r.data(), m_r.data(), r_r.data(), res_r.data(), w.data(), bias, N,
                           C);
    cpu::layernorm_forward(o32.data(), m_u.data(), r_u.data(), res.data(), w.data(), bias, N, C);
    EXPECT_EQ(res, res_r);
    expect_float_agreement(o32, o32_r, t, "fused layernorm");
    EXPECT_EQ(out.bits, Lowp(o32, t).bits) << "the fused output is its float32 row rounded once";
    Lowp out_r(o32_r, t);
    expect_within(out.values(), out_r.values(), rounded_tolerance(o32, o32_r, t), "fused out");
  }

  // With a branch weight w (the attention gain's residual, attn_gain): skip_forward(res, a, b, w)
  // then layernorm_forward bit for bit, a float32 and a 16-bit output, LayerNorm and RMSNorm, on
  // every target; w = 1 is the plain sum.
  testing::for_each_target([&](const std::string& target) {
    for (DType out_t : {DType::kF32, t}) {
      for (NormKind norm : {NormKind::kLayerNorm, NormKind::kRmsNorm}) {
        for (float gain : {0.37f, 1.0f}) {
          const float* bias = norm == NormKind::kLayerNorm ? bi.data() : nullptr;
          std::vector<float> res(size_t(N) * C), m(N), r(N), res_u(res.size()), m_u(N), r_u(N);
          Lowp out(std::vector<float>(res.size()), out_t);
          Lowp out_u(std::vector<float>(res.size()), out_t);
          cpu::residual_layernorm_forward(ctx, res.data(), out.ptr(), m.data(), r.data(), a.data(),
                                          b.data(), w.data(), bias, N, C, norm, gain);
          cpu::skip_forward(res_u.data(), a.data(), b.data(), gain, int64_t{N} * C);
          cpu::layernorm_forward(ctx, out_u.ptr(), m_u.data(), r_u.data(), res_u.data(), w.data(),
                                 bias, N, C, norm);
          const std::string where = fmt::format("{} {} gain {} {}", target, dtype_name(out_t), gain,
                                                norm == NormKind::kRmsNorm ? "rms" : "ln");
          EXPECT_EQ(res, res_u) << where;
          EXPECT_TRUE(out == out_u) << where;
          EXPECT_EQ(r, r_u) << where;
          if (gain != 1.0f) continue;
          std::vector<float> sum(res.size());
          cpu::residual_forward(sum.data(), a.data(), b.data(), int64_t{N} * C);
          EXPECT_EQ(res, sum) << where << " (the plain sum)";
        }
      }
    }
  });
}

TEST_P(LowpOpsTest, GeluForwardAndBackward) {
  testing::for_each_target([&](const std::string&) {  // a context (and tables) per target
    const DType t = GetParam();
    CpuBackend ctx;
    const int64_t N = 5000;  // several conversion blocks and a tail
    for (MlpActivation kind :
         {MlpActivation::kTanh, MlpActivation::kExact, MlpActivation::kRelu2}) {
      Lowp x(random_normal(N, 1, 3.0f), t);
      std::vector<float> y32(N), y32_r(N);
      cpu::gelu_forward(ctx, TypedPtr(y32.data()), x.ptr(), N, kind);
      ref::gelu_forward(TypedPtr(y32_r.data()), x.ptr(), N, kind);
      expect_float_agreement(y32, y32_r, t, "gelu");
      Lowp y(y32, t), y_r(y32, t);
      cpu::gelu_forward(ctx, y.ptr(), x.ptr(), N, kind);
      ref::gelu_forward(y_r.ptr(), x.ptr(), N, kind);
      EXPECT_EQ(y.bits, Lowp(y32, t).bits);
      expect_within(y.values(), y_r.values(), rounded_tolerance(y32, y32_r, t), "gelu out");

      // Backward accumulates into a low-precision dinp: round(old + update).
      Lowp dout(random_normal(N, 2), t), old(random_normal(N, 3), t);
      std::vector<float> g32 = old.f32, g32_r = old.f32;
      cpu::gelu_backward(ctx, TypedPtr(g32.data()), x.ptr(), dout.ptr(), N, kind);
      ref::gelu_backward(TypedPtr(g32_r.data()), x.ptr(), dout.ptr(), N, kind);
      expect_float_agreement(g32, g32_r, t, "gelu backward");
      Lowp g = old, g_r = old;
      cpu::gelu_backward(ctx, g.ptr(), x.ptr(), dout.ptr(), N, kind);
      ref::gelu_backward(g_r.ptr(), x.ptr(), dout.ptr(), N, kind);
      EXPECT_EQ(g.bits, Lowp(g32, t).bits);
      expect_within(g.values(), g_r.values(), rounded_tolerance(g32, g32_r, t), "gelu dinp");

      // The overwriting backward on a dinp of garbage: bit for bit the accumulation into zeros.
      Lowp zeroed(size_t(N), t), set = old;
      cpu::gelu_backward(ctx, zeroed.ptr(), x.ptr(), dout.ptr(), N, kind);
      cpu::gelu_backward_overwrite(ctx, set.ptr(), x.ptr(), dout.ptr(), N, kind);
      EXPECT_EQ(set.bits, zeroed.bits) << "gelu_backward_overwrite";
    }
  });
}

// bf16 GELU looks up tables of every bf16 input, relu2 computes on widened blocks
// (lowp_elementwise.cpp): over all 65536 inputs (NaNs, infinities, subnormals included), forward,
// accumulating and overwriting backward give the bits of the float32 kernel on the widened values,
// rounded once, on every CPU target.
TEST(LowpGeluTest, Bf16TablesGiveTheFloat32KernelsBitsForEveryInput) {
  testing::for_each_target([&](const std::string&) {  // a context (and tables) per target
    CpuBackend ctx;
    const int64_t N = 65536;
    Lowp x(std::vector<float>(N), DType::kBF16);
    for (int64_t i = 0; i < N; ++i) {
      x.bits[i] = static_cast<uint16_t>(i);
      x.f32[i] = bf16_to_float(x.bits[i]);
    }
    for (MlpActivation kind :
         {MlpActivation::kTanh, MlpActivation::kExact, MlpActivation::kRelu2}) {
      std::vector<float> y32(N);
      cpu::gelu_forward(y32.data(), x.f32.data(), N, kind);
      Lowp y(size_t(N), DType::kBF16);
      cpu::gelu_forward(ctx, y.ptr(), x.ptr(), N, kind);
      EXPECT_EQ(y.bits, Lowp(y32, DType::kBF16).bits) << "forward";

      Lowp dout(random_normal(N, 4), DType::kBF16), old(random_normal(N, 5), DType::kBF16);
      std::vector<float> g32 = old.f32, z32(N, 0.0f);
      cpu::gelu_backward(g32.data(), x.f32.data(), dout.f32.data(), N, kind);
      cpu::gelu_backward(z32.data(), x.f32.data(), dout.f32.data(), N, kind);
      Lowp g = old, set = old;
      cpu::gelu_backward(ctx, g.ptr(), x.ptr(), dout.ptr(), N, kind);
      cpu::gelu_backward_overwrite(ctx, set.ptr(), x.ptr(), dout.ptr(), N, kind);
      EXPECT_EQ(g.bits, Lowp(g32, DType::kBF16).bits) << "backward";
      EXPECT_EQ(set.bits, Lowp(z32, DType::kBF16).bits) << "overwriting backward";
    }
  });
}

TEST_P(LowpOpsTest, AttentionForwardAndBackwardWithDropout) {
  const DType t = GetParam();
  CpuBackend ctx;
  const int B = 5, T = 19, C = 32, NH = 2;  // attention_batch_group(5, 2) = 5; and NH 16 below
  for (int nh : {NH, 16}) {
    const float p = 0.1f;
    const uint64_t seed = 77;
    Lowp qkv(random_normal(size_t(B) * T * 3 * C, 1), t);
    std::vector<float> o32(size_t(B) * T * C), o32_r(o32.size()), lse(size_t(B) * nh * T),
        lse_r(lse.size());
    cpu::attention_forward(ctx, TypedPtr(o32.data()), lse.data(), qkv.ptr(), B, T, C, nh, p, seed);
    ref::attention_forward(TypedPtr(o32_r.data()), lse_r.data(), qkv.ptr(), B, T, C, nh, p, seed);
    expect_float_agreement(o32, o32_r, t, "attention out");
    expect_float_agreement(lse, lse_r, t, "attention lse");
    // All-bf16 tensors of this shape take the native bf16 kernel where there is one (P and dS
    // rounded to bf16 before their products: checked against the reference in
    // attention_bf16_test.cpp); here the widened way, which kernel_choice = 'widened' (or the
    // planner) selects on such a CPU and every other CPU runs anyway.
    ctx.set_ways({.attention_bf16 = AttentionBf16Way::kWidened});
    Lowp out(o32, t), out_r(o32, t);
    cpu::attention_forward(ctx, out.ptr(), lse.data(), qkv.ptr(), B, T, C, nh, p, seed);
    ref::attention_forward(out_r.ptr(), lse_r.data(), qkv.ptr(), B, T, C, nh, p, seed);
    EXPECT_EQ(out.bits, Lowp(o32, t).bits);
    expect_within(out.values(), out_r.values(), rounded_tolerance(o32, o32_r, t), "attention out");

    Lowp dout(random_normal(o32.size(), 2), t), old(random_normal(qkv.f32.size(), 3), t);
    std::vector<float> d32 = old.f32, d32_r = old.f32;
    cpu::attention_backward(ctx, TypedPtr(d32.data()), dout.ptr(), out.ptr(), lse.data(), qkv.ptr(), B, T, C, nh, p, seed);
    ref::attention_backward(TypedPtr(d32_r.data()), dout.ptr(), out.ptr(), lse.data(), qkv.ptr(), B, T, C, nh, p, seed);
    expect_float_agreement(d32, d32_r, t, "attention dqkv");
    Lowp d = old, d_r = old;
    cpu::attention_backward(ctx, d.ptr(), dout.ptr(), out.ptr(), lse.data(), qkv.ptr(), B, T, C, nh, p, seed);
    ref::attention_backward(d_r.ptr(), dout.ptr(), out.ptr(), lse.data(), qkv.ptr(), B, T, C, nh, p, seed);
    EXPECT_EQ(d.bits, Lowp(d32, t).bits);
    expect_within(d.values(), d_r.values(), rounded_tolerance(d32, d32_r, t), "attention dqkv");
  }
}

INSTANTIATE_TEST_SUITE_P(Types, LowpOpsTest, ::testing::Values(DType::kBF16, DType::kF16),
                         [](const auto& i) { return std::string(dtype_name(i.param)); });

TEST(LowpMatmulTest, NativeBf16ReportsItsKernel) {
  CpuBackend ctx;
  const char* name = nullptr;
  const bool native = cpu::native_matmul(ctx, DType::kBF16, &name);
  ASSERT_NE(name, nullptr);
  if (native) {
    EXPECT_NE(std::string(name), "");
  }
  EXPECT_FALSE(cpu::native_matmul(ctx, DType::kF16));
  EXPECT_TRUE(cpu::native_matmul(ctx, DType::kF32));
}

}  // namespace
}  // namespace nanogpt
