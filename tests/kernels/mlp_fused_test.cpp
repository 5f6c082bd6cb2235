// The fused MLP ops (ops_lowp.h: matmul_gelu_forward, gelu_matmul_backward, fused=True) against
// the unfused sequence of cpu ops they replace, in float32, bf16 and fp16, with shapes that span
// several row blocks and a tail; and in float32 against their scalar references (kernels/ref).
// Tolerances come from the precision: a float32 sum of K products differs from another order of
// the same sum by at most (K + 2) u32 S (S = the sum of the magnitudes), and a value rounded to
// the storage type moves by at most u_t of its magnitude.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <tuple>

#include "core/float16.h"
#include "kernel_test_util.h"
#include "kernels/cpu_backend.h"
#include "kernels/ops_lowp.h"
#include "lowp_tensor.h"

namespace nanogpt {
namespace {

using testing::abs_of;
using testing::expect_within;
using testing::kEps;
using testing::Lowp;
using testing::random_normal;
using testing::tiny;
using testing::unit_roundoff;

// The largest |gelu'(x)| (tanh form and exact form both stay below 1.13).
constexpr double kGeluSlope = 1.13;

// Matmul-sized tolerance: (K + 2) u32 S of float32 sums, each side rounded to `out`.
std::vector<double> sum_tolerance(const std::vector<float>& S, const std::vector<float>& want,
                                  int64_t K, DType out, double slope = 1.0) {
  const double e = double(K + 2) * kUnitRoundoffF32, uo = unit_roundoff(out);
  std::vector<double> tol(S.size());
  for (size_t i = 0; i < S.size(); ++i) {
    tol[i] = slope * (e * S[i] + 2 * uo * (S[i] + e * S[i])) + 2 * uo * std::fabs(want[i]) +
             4 * tiny(out) + 1e-30;
  }
  return tol;
}

// (dtype, N, C, OC, gelu kind). In the forward, OC is the wide side (blocks of (rows, OC)); in the
// backward the op is the MLP's projection: pre (N, C) wide, dout (N, OC).
class MlpFusedTest
    : public ::testing::TestWithParam<std::tuple<DType, int, int, int, MlpActivation>> {};

TEST_P(MlpFusedTest, ForwardMatchesMatmulThenGelu) {
  const auto [t, N, C, OC, kind] = GetParam();
  CpuBackend ctx;
  Lowp inp(random_normal(size_t(N) * C, 1), t), w(random_normal(size_t(OC) * C, 2, 0.3f), t);
  const auto b = random_normal(OC, 3, 0.5f);
  Lowp fch(size_t(N) * OC, t), act(size_t(N) * OC, t);
  cpu::matmul_gelu_forward(ctx, fch.ptr(), act.ptr(), inp.ptr(), w.ptr(), b.data(), N, C, OC,
                           kind);
  Lowp fch_u(size_t(N) * OC, t), act_u(size_t(N) * OC, t);
  cpu::matmul_forward(ctx, fch_u.ptr(), inp.ptr(), w.ptr(), b.data(), N, C, OC);
  cpu::gelu_forward(ctx, act_u.ptr(), fch_u.ptr(), int64_t(N) * OC, kind);

  // fch: the same products summed by the same kind of kernel on a block of rows.
  std::vector<float> S(size_t(N) * OC);
  const auto ai = abs_of(inp.values()), aw = abs_of(w.values()), ab = abs_of(b);
  ref::matmul_forward(S.data(), ai.data(), aw.data(), ab.data(), N, C, OC);
  expect_within(fch.values(), fch_u.values(), sum_tolerance(S, fch_u.values(), C + 1, t), "fch");
  // fch_gelu is exactly the GELU of fch as stored.
  Lowp act_of_fch(size_t(N) * OC, t);
  cpu::gelu_forward(ctx, act_of_fch.ptr(), fch.ptr(), int64_t(N) * OC, kind);
  EXPECT_TRUE(act == act_of_fch) << "fch_gelu != gelu(fch)";
}

TEST_P(MlpFusedTest, BackwardMatchesGeluMatmulAndGeluBackward) {
  const auto [t, N, C, OC, kind] = GetParam();
  CpuBackend ctx;
  Lowp pre(random_normal(size_t(N) * C, 4, 1.5f), t), w(random_normal(size_t(OC) * C, 5, 0.3f), t);
  Lowp dout(random_normal(size_t(N) * OC, 6), t);
  const auto dw0 = random_normal(size_t(OC) * C, 7), db0 = random_normal(OC, 8);

  // Fused; dpre starts as garbage (it is overwritten).
  Lowp dpre(random_normal(size_t(N) * C, 9), t);
  auto dw = dw0, db = db0;
  cpu::gelu_matmul_backward(ctx, dpre.ptr(), dw.data(), db.data(), dout.ptr(), pre.ptr(), w.ptr(),
                            N, C, OC, kind);
  // Unfused: gelu recomputed, matmul backward into a zeroed d(gelu), gelu backward into zeroed dpre.
  Lowp act(size_t(N) * C, t), dact(size_t(N) * C, t), dpre_u(size_t(N) * C, t);
  auto dw_u = dw0, db_u = db0;
  cpu::gelu_forward(ctx, act.ptr(), pre.ptr(), int64_t(N) * C, kind);
  cpu::matmul_backward(ctx, dact.ptr(), dw_u.data(), db_u.data(), dout.ptr(), act.ptr(), w.ptr(), N,
                       C, OC);
  cpu::gelu_backward(ctx, dpre_u.ptr(), pre.ptr(), dact.ptr(), int64_t(N) * C, kind);

  // dpre: d(gelu) is a sum over OC (another kernel call, same order class), rounded to t, then
  // multiplied by gelu' (|gelu'| < 1.13) and rounded again.
  const auto ad = abs_of(dout.values()), aw = abs_of(w.values()), ap = abs_of(pre.values());
  std::vector<float> Sdact(size_t(N) * C, 0.0f);
  ref::matmul_backward(Sdact.data(), nullptr, nullptr, ad.data(), ap.data(), aw.data(), N, C, OC);
  expect_within(dpre.values(), dpre_u.values(),
                sum_tolerance(Sdact, dpre_u.values(), OC + 1, t, kGeluSlope), "dpre");
  // dweight: the same products (|gelu(x)| <= |x|) summed over N block by block.
  std::vector<float> Sdw = abs_of(dw0), zero_b(OC, 0.0f);
  ref::matmul_backward(nullptr, Sdw.data(), zero_b.data(), ad.data(), ap.data(), aw.data(), N, C,
                       OC);
  expect_within(dw, dw_u, sum_tolerance(Sdw, dw_u, N + 1, DType::kF32), "dweight");
  // dbias: the same column sums over all rows.
  EXPECT_EQ(db, db_u);

  // No bias gradient, and dweight null: dpre alone.
  Lowp dpre2(size_t(N) * C, t);
  cpu::gelu_matmul_backward(ctx, dpre2.ptr(), nullptr, nullptr, dout.ptr(), pre.ptr(), w.ptr(), N,
                            C, OC, kind);
  EXPECT_TRUE(dpre2 == dpre);
}

// Float32 with C and OC multiples of 16 and at most 2^26 multiply-adds (600 x 16 x 2048; nanoGPT's
// CPU recipe's 768 x 128 x 512) runs as one small_gemm region (mlp_fusion_one_region); the other
// shapes run row blocks: float32 rows per block are 2^21 / width rounded to 64 (1024 at width
// 2048), so N 2100 is 2 blocks + a tail; N 1 and 37 are one short block. fp16 widens in chunks of
// 4M / width rows.
INSTANTIATE_TEST_SUITE_P(
    Shapes, MlpFusedTest,
    ::testing::Values(std::make_tuple(DType::kF32, 600, 16, 2048, MlpActivation::kTanh),
                      std::make_tuple(DType::kF32, 768, 128, 512, MlpActivation::kTanh),
                      std::make_tuple(DType::kF32, 2100, 24, 2048, MlpActivation::kExact),
                      std::make_tuple(DType::kF32, 37, 24, 96, MlpActivation::kExact),
                      std::make_tuple(DType::kF32, 1, 8, 64, MlpActivation::kTanh),
                      std::make_tuple(DType::kBF16, 600, 16, 2048, MlpActivation::kTanh),
                      std::make_tuple(DType::kBF16, 37, 24, 96, MlpActivation::kExact),
                      std::make_tuple(DType::kF16, 2100, 16, 2048, MlpActivation::kTanh),
                      std::make_tuple(DType::kF16, 37, 24, 96, MlpActivation::kTanh)));

// Which fused MLP ops run as one small_gemm region (and so are taken by fused=True even with
// fused_mlp off): float32 at small_gemm's shapes only.
TEST(MlpFusedTest, OneRegionForSmallFloat32Shapes) {
  CpuBackend ctx;
  EXPECT_TRUE(cpu::mlp_fusion_one_region(ctx, DType::kF32, 768, 128, 512));  // nanoGPT's CPU recipe
  EXPECT_FALSE(cpu::mlp_fusion_one_region(ctx, DType::kBF16, 768, 128, 512));
  EXPECT_FALSE(cpu::mlp_fusion_one_region(ctx, DType::kF32, 16384, 384, 1536));  // W2: row blocks
  EXPECT_FALSE(cpu::mlp_fusion_one_region(ctx, DType::kF32, 37, 24, 96));        // C not 16-wide
  EXPECT_FALSE(cpu::mlp_fusion_one_region(ctx, DType::kF32, 1, 128, 512));       // one row
  // The run's small products on oneDNN (kernel_ways.h): no tile GEMM, so no single region.
  ctx.set_ways({.small_products_f32 = SmallProductsWay::kOnednn});
  EXPECT_FALSE(cpu::mlp_fusion_one_region(ctx, DType::kF32, 768, 128, 512));
}

// With the small products on oneDNN the fused ops run their row blocks through oneDNN's matmul
// and our GELU: the same function (the values of the unfused ops on that way, bit for bit).
TEST(MlpFusedTest, SmallProductsOnOnednnRunTheRowBlocks) {
  const int N = 768, C = 128, OC = 512;
  CpuBackend ctx;
  ctx.set_ways({.small_products_f32 = SmallProductsWay::kOnednn});
  const auto x = random_normal(size_t(N) * C, 1), w = random_normal(size_t(OC) * C, 2, 0.1f);
  const auto b = random_normal(OC, 3, 0.5f);
  std::vector<float> fch(size_t(N) * OC), act(fch.size()), fch2(fch.size()), act2(fch.size());
  cpu::matmul_gelu_forward(ctx, fch.data(), act.data(), x.data(), w.data(), b.data(), N, C, OC,
                           MlpActivation::kTanh);
  cpu::matmul_forward(ctx, fch2.data(), x.data(), w.data(), b.data(), N, C, OC);
  cpu::gelu_forward(act2.data(), fch2.data(), int64_t(N) * OC, MlpActivation::kTanh);
  EXPECT_EQ(fch, fch2);
  EXPECT_EQ(act, act2);
}

// float32 against the scalar references (the composition of ref ops, std::tanh / erf, double
// sums): the GELU error model of elementwise_test (tanh within 4 eps, erf within 1.5e-7 + 4 eps)
// on top of the sums' (K + 2) u32 S.
TEST(MlpFusedTest, Float32MatchesScalarReference) {
  const int N = 300, C = 16, OC = 2048;  // forward: two blocks and a tail
  for (MlpActivation kind : {MlpActivation::kTanh, MlpActivation::kExact}) {
    CpuBackend ctx;
    const double e_f = kind == MlpActivation::kTanh ? 4 * kEps : 1.5e-7 + 4 * kEps;
    const auto x = random_normal(size_t(N) * C, 1), w = random_normal(size_t(OC) * C, 2, 0.3f);
    const auto b = random_normal(OC, 3, 0.5f);
    std::vector<float> fch(size_t(N) * OC), act(fch.size()), fch_r(fch.size()), act_r(fch.size());
    cpu::matmul_gelu_forward(ctx, fch.data(), act.data(), x.data(), w.data(), b.data(), N, C, OC,
                             kind);
    ref::matmul_gelu_forward(fch_r.data(), act_r.data(), x.data(), w.data(), b.data(), N, C, OC,
                             kind);
    std::vector<float> S(fch.size());
    const auto ax = abs_of(x), aw = abs_of(w), ab = abs_of(b);
    ref::matmul_forward(S.data(), ax.data(), aw.data(), ab.data(), N, C, OC);
    const auto tol_fch = sum_tolerance(S, fch_r, C + 1, DType::kF32);
    expect_within(fch, fch_r, tol_fch, "fch vs ref");
    std::vector<double> tol_act(fch.size());
    for (size_t i = 0; i < tol_act.size(); ++i) {
      tol_act[i] = kGeluSlope * tol_fch[i] + 0.5 * std::fabs(fch_r[i]) * e_f +
                   4 * kEps * std::fabs(act_r[i]) + 1e-30;
    }
    expect_within(act, act_r, tol_act, "fch_gelu vs ref");

    // Backward of the projection out (N, C2) = gelu(pre (N, OC)) . w2^T, pre = fch_r.
    const int C2 = C;
    const auto w2 = random_normal(size_t(C2) * OC, 4, 0.3f), dout = random_normal(size_t(N) * C2, 5);
    std::vector<float> dpre(fch.size()), dpre_r(fch.size()), dw(w2.size(), 0.0f),
        dw_r(w2.size(), 0.0f), db(C2, 0.0f), db_r(C2, 0.0f);
    cpu::gelu_matmul_backward(ctx, dpre.data(), dw.data(), db.data(), dout.data(), fch_r.data(),
                              w2.data(), N, OC, C2, kind);
    ref::gelu_matmul_backward(dpre_r.data(), dw_r.data(), db_r.data(), dout.data(), fch_r.data(),
                              w2.data(), N, OC, C2, kind);
    const auto ad = abs_of(dout), aw2 = abs_of(w2), ap = abs_of(fch_r);
    std::vector<float> Sd(fch.size(), 0.0f), Sw(w2.size(), 0.0f), Sb(C2, 0.0f);
    ref::matmul_backward(Sd.data(), Sw.data(), Sb.data(), ad.data(), ap.data(), aw2.data(), N, OC,
                         C2);
    std::vector<double> tol_d(fch.size());
    for (size_t i = 0; i < tol_d.size(); ++i) {
      const double a = std::fabs(fch_r[i]);
      const double wgt =
          kind == MlpActivation::kTanh ? 0.5 + a * 0.7978845608 * (1 + 3 * 0.044715 * a * a) : 0.5;
      // |gelu'| times the sum's error, plus |d(gelu)| <= Sd times gelu''s error.
      tol_d[i] = kGeluSlope * double(C2 + 2) * kUnitRoundoffF32 * Sd[i] +
                 Sd[i] * (wgt * e_f + 4 * kEps * (1 + a)) + 2 * kEps * std::fabs(dpre_r[i]) + 1e-30;
    }
    expect_within(dpre, dpre_r, tol_d, "dpre vs ref");
    std::vector<double> tol_w(w2.size());
    for (size_t i = 0; i < tol_w.size(); ++i) {  // |gelu(x) error| <= (0.5 e_f + 4 eps) |x|
      tol_w[i] = (double(N + 2) * kUnitRoundoffF32 + 0.5 * e_f + 4 * kEps) * Sw[i] + 1e-30;
    }
    expect_within(dw, dw_r, tol_w, "dweight vs ref");
    expect_within(db, db_r, sum_tolerance(Sb, db_r, N + 1, DType::kF32), "dbias vs ref");
  }
}

}  // namespace
}  // namespace nanogpt
