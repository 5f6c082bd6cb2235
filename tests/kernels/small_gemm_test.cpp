// cpu::small_gemm (the tile GEMM of small fully connected layers) vs ref::matmul: forward with and
// without bias, the accumulating backward (dinp, dweight, either alone), on shapes with partial
// panels and K chunks and rows not a multiple of the tiles; the GELU-fused forms against the
// unfused ops, bit for bit; bit-identical results on 1, 2 and 3 threads; and which shapes
// matmul.cpp routes here. Each on every CPU target this machine can run (dispatch_test_util.h).
#include "kernels/cpu/small_gemm.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <tuple>

#include "dispatch_test_util.h"
#include "kernel_test_util.h"
#include "kernels/cpu/context_impl.h"
#include "kernels/ops.h"

namespace nanogpt {
namespace {

using testing::abs_of;
using testing::dot_tolerance;
using testing::expect_within;
using testing::random_normal;
using testing::ScopedOmpThreads;

class SmallGemmTest : public ::testing::TestWithParam<std::tuple<int, int, int>> {};

TEST_P(SmallGemmTest, ForwardAndBackwardMatchReference) {
  testing::for_each_target([&](const std::string&) {
    const auto [N, C, OC] = GetParam();
    ASSERT_TRUE(cpu::small_gemm_fits(N, C, OC));
    const auto inp = random_normal(size_t(N) * C, 1);       // (N,C)
    const auto w = random_normal(size_t(OC) * C, 2, 0.2f);  // (OC,C)
    const auto b = random_normal(OC, 3);                    // (OC)
    const auto ainp = abs_of(inp), aw = abs_of(w), ab = abs_of(b);
    for (const bool with_bias : {false, true}) {
      const float* bias = with_bias ? b.data() : nullptr;
      std::vector<float> out(size_t(N) * OC, NAN), want(out.size()), mag(out.size());
      cpu::small_gemm_forward(out.data(), inp.data(), w.data(), bias, N, C, OC);
      ref::matmul_forward(want.data(), inp.data(), w.data(), bias, N, C, OC);
      ref::matmul_forward(mag.data(), ainp.data(), aw.data(), with_bias ? ab.data() : nullptr, N, C,
                          OC);
      expect_within(out, want, dot_tolerance(mag, want, C + 1), with_bias ? "out (bias)" : "out");
    }

    // Backward, accumulating into nonzero grads; then each product alone.
    const auto dout = random_normal(size_t(N) * OC, 4);  // (N,OC)
    const auto dinp0 = random_normal(size_t(N) * C, 5);
    const auto dw0 = random_normal(size_t(OC) * C, 6);
    auto dinp_r = dinp0, dw_r = dw0;
    ref::matmul_backward(dinp_r.data(), dw_r.data(), nullptr, dout.data(), inp.data(), w.data(), N,
                         C, OC);
    const auto adout = abs_of(dout);
    auto mdinp = abs_of(dinp0), mdw = abs_of(dw0);
    ref::matmul_backward(mdinp.data(), mdw.data(), nullptr, adout.data(), ainp.data(), aw.data(), N,
                         C, OC);
    const auto tol_dinp = dot_tolerance(mdinp, dinp_r, OC + 1);
    const auto tol_dw = dot_tolerance(mdw, dw_r, N + 1);

    // dbias: column sums of dout added to nonzero values.
    const auto db0 = random_normal(OC, 7);
    auto db_r = db0, mdb = abs_of(db0);
    ref::matmul_backward(nullptr, nullptr, db_r.data(), dout.data(), inp.data(), w.data(), N, C,
                         OC);
    ref::matmul_backward(nullptr, nullptr, mdb.data(), adout.data(), ainp.data(), aw.data(), N, C,
                         OC);
    auto db = db0;
    cpu::small_gemm_backward(nullptr, true, nullptr, db.data(), dout.data(), inp.data(), w.data(),
                             N, C, OC);
    expect_within(db, db_r, dot_tolerance(mdb, db_r, N + 1), "dbias");
    auto db_all = db0;  // with both products in the same region: the same floats
    std::vector<float> dinp_all = dinp0, dw_all = dw0;
    cpu::small_gemm_backward(dinp_all.data(), true, dw_all.data(), db_all.data(), dout.data(),
                             inp.data(), w.data(), N, C, OC);
    EXPECT_EQ(db_all, db) << "dbias with the products";

    auto dinp = dinp0, dw = dw0;
    cpu::small_gemm_backward(dinp.data(), true, dw.data(), nullptr, dout.data(), inp.data(),
                             w.data(), N, C, OC);
    expect_within(dinp, dinp_r, tol_dinp, "dinp");
    expect_within(dw, dw_r, tol_dw, "dweight");

    // Overwritten dinp (NaN before) equals the accumulation from zero, bit for bit.
    std::vector<float> dinp_set(dinp0.size(), NAN), dinp_zero(dinp0.size(), 0.0f);
    cpu::small_gemm_backward(dinp_set.data(), false, nullptr, nullptr, dout.data(), inp.data(),
                             w.data(), N, C, OC);
    cpu::small_gemm_backward(dinp_zero.data(), true, nullptr, nullptr, dout.data(), inp.data(),
                             w.data(), N, C, OC);
    EXPECT_EQ(dinp_set, dinp_zero) << "dinp overwritten";

    auto dinp_only = dinp0, dw_only = dw0;
    cpu::small_gemm_backward(dinp_only.data(), true, nullptr, nullptr, dout.data(), inp.data(),
                             w.data(), N, C, OC);
    cpu::small_gemm_backward(nullptr, true, dw_only.data(), nullptr, dout.data(), inp.data(),
                             w.data(), N, C, OC);
    EXPECT_EQ(dinp_only, dinp) << "dinp alone";
    EXPECT_EQ(dw_only, dw) << "dweight alone";
  });
}

// The MLP's GELU fused into the products' region gives the unfused ops' floats exactly: forward =
// small_gemm_forward then gelu_forward; backward = gelu_forward, small_gemm_backward into an
// overwritten d(gelu), gelu_backward_overwrite (the float32 model's unfused MLP).
TEST_P(SmallGemmTest, GeluFusedMatchesTheUnfusedOpsBitForBit) {
  testing::for_each_target([&](const std::string&) {
    const auto [N, C, OC] = GetParam();
    const auto inp = random_normal(size_t(N) * C, 21, 1.5f);  // (N,C): x, or pre in the backward
    const auto w = random_normal(size_t(OC) * C, 22, 0.2f);   // (OC,C)
    const auto b = random_normal(OC, 23);
    const auto dout = random_normal(size_t(N) * OC, 24);  // (N,OC)
    const auto dw0 = random_normal(size_t(OC) * C, 25);
    for (const MlpActivation kind : {MlpActivation::kTanh, MlpActivation::kExact}) {
      const char* name = kind == MlpActivation::kTanh ? "tanh" : "exact";
      std::vector<float> out(size_t(N) * OC, NAN), act(out.size(), NAN);
      cpu::small_gemm_gelu_forward(out.data(), act.data(), inp.data(), w.data(), b.data(), N, C, OC,
                                   kind);
      std::vector<float> out_u(out.size()), act_u(out.size());
      cpu::small_gemm_forward(out_u.data(), inp.data(), w.data(), b.data(), N, C, OC);
      cpu::gelu_forward(act_u.data(), out_u.data(), int64_t(N) * OC, kind);
      EXPECT_EQ(out, out_u) << name << ": pre-activation";
      EXPECT_EQ(act, act_u) << name << ": gelu";

      std::vector<float> dpre(size_t(N) * C, NAN), db(OC, 0.5f), db_u(OC, 0.5f);
      auto dw = dw0;
      cpu::small_gemm_gelu_backward(dpre.data(), dw.data(), db.data(), dout.data(), inp.data(),
                                    w.data(), N, C, OC, kind);
      std::vector<float> gelu(size_t(N) * C), dgelu(gelu.size(), NAN), dpre_u(gelu.size(), NAN);
      auto dw_u = dw0;
      cpu::gelu_forward(gelu.data(), inp.data(), int64_t(N) * C, kind);
      cpu::small_gemm_backward(dgelu.data(), false, dw_u.data(), db_u.data(), dout.data(),
                               gelu.data(), w.data(), N, C, OC);
      cpu::gelu_backward_overwrite(dpre_u.data(), inp.data(), dgelu.data(), int64_t(N) * C, kind);
      EXPECT_EQ(dpre, dpre_u) << name << ": dpre";
      EXPECT_EQ(dw, dw_u) << name << ": dweight";
      EXPECT_EQ(db, db_u) << name << ": dbias";

      std::vector<float> dpre_only(dpre.size(), NAN);  // without dweight
      cpu::small_gemm_gelu_backward(dpre_only.data(), nullptr, nullptr, dout.data(), inp.data(),
                                    w.data(), N, C, OC, kind);
      EXPECT_EQ(dpre_only, dpre) << name << ": dpre alone";
    }
  });
}

// Rows not a multiple of 4 or 16; C and OC with partial 64-column panels; K chunks of 128 with a
// remainder (C 272 forward, OC 208 in dinp, N 300 in dweight); nanoGPT's CPU recipe's shapes.
INSTANTIATE_TEST_SUITE_P(Shapes, SmallGemmTest,
                         ::testing::Values(std::make_tuple(2, 16, 16), std::make_tuple(5, 32, 48),
                                           std::make_tuple(37, 48, 144),
                                           std::make_tuple(130, 272, 80),
                                           std::make_tuple(300, 64, 208),
                                           std::make_tuple(768, 128, 384),
                                           std::make_tuple(768, 512, 128)));

// Each output element is one FMA chain whatever the thread split: same bytes on 1, 2, 3 threads.
// 300 rows: the forward and input-gradient products by row bands; 40 rows (3 bands, 1.2M
// multiply-adds): by columns.
TEST(SmallGemmThreads, ResultsDoNotDependOnTheThreadCount) {
  for (const int N : {300, 40}) {
    testing::for_each_target([&](const std::string&) {
      const int C = 208, OC = 144;  // 9M / 1.2M multiply-adds: parallel regions
      const auto inp = random_normal(size_t(N) * C, 11),
                 w = random_normal(size_t(OC) * C, 12, 0.2f);
      const auto b = random_normal(OC, 13), dout = random_normal(size_t(N) * OC, 14);
      const ScopedOmpThreads omp_threads;
      std::vector<float> out0, dinp0, dw0, act0, dpre0, db0;
      for (const int threads : {1, 2, 3}) {
        omp_threads.set(threads);
        std::vector<float> out(size_t(N) * OC), dinp(size_t(N) * C, 0.5f),
            dw(size_t(OC) * C, -0.25f), db(OC, 0.125f);
        cpu::small_gemm_forward(out.data(), inp.data(), w.data(), b.data(), N, C, OC);
        cpu::small_gemm_backward(dinp.data(), true, dw.data(), db.data(), dout.data(), inp.data(),
                                 w.data(), N, C, OC);
        // The GELU-fused forms: (N, C) x (C, OC) then the backward of gelu (N, C) x (C, OC).
        std::vector<float> act(out.size()), dpre(size_t(N) * C);
        cpu::small_gemm_gelu_forward(out.data(), act.data(), inp.data(), w.data(), b.data(), N, C,
                                     OC, MlpActivation::kTanh);
        cpu::small_gemm_gelu_backward(dpre.data(), dw.data(), nullptr, dout.data(), inp.data(),
                                      w.data(), N, C, OC, MlpActivation::kTanh);
        if (threads == 1) {
          out0 = out, dinp0 = dinp, dw0 = dw, act0 = act, dpre0 = dpre, db0 = db;
        } else {
          EXPECT_EQ(out, out0) << threads << " threads: out";
          EXPECT_EQ(dinp, dinp0) << threads << " threads: dinp";
          EXPECT_EQ(dw, dw0) << threads << " threads: dweight";
          EXPECT_EQ(act, act0) << threads << " threads: gelu";
          EXPECT_EQ(dpre, dpre0) << threads << " threads: dpre";
          EXPECT_EQ(db, db0) << threads << " threads: dbias";
        }
      }
    });
  }
}

TEST(SmallGemmFits, SmallShapesWithWholeVectorsOnly) {
  EXPECT_TRUE(cpu::small_gemm_fits(768, 128, 384));  // nanoGPT's CPU recipe
  EXPECT_TRUE(cpu::small_gemm_fits(768, 512, 128));
  EXPECT_FALSE(cpu::small_gemm_fits(1, 128, 384));     // one row: the GEMV
  EXPECT_FALSE(cpu::small_gemm_fits(130, 64, 101));    // OC not a multiple of 16
  EXPECT_FALSE(cpu::small_gemm_fits(130, 40, 64));     // C not a multiple of 16
  EXPECT_FALSE(cpu::small_gemm_fits(256, 768, 2304));  // GPT-2 124M: oneDNN
  EXPECT_FALSE(cpu::small_gemm_fits(16384, 384, 1536));
}

// The run's small products way (kernel_ways.h) decides where a fitting product runs: the tiles
// (the default) or oneDNN. matmul_forward / matmul_backward then give that way's floats bit for
// bit, and both ways agree with each other within float32 sums' error.
TEST(SmallGemmRuns, TheSmallProductsWayPicksTilesOrOnednn) {
  const int64_t N = 96;
  const int C = 64, OC = 48;
  CpuBackend tiles, onednn;
  onednn.set_ways({.small_products_f32 = SmallProductsWay::kOnednn});
  EXPECT_TRUE(cpu::small_gemm_runs(tiles, N, C, OC));
  EXPECT_FALSE(cpu::small_gemm_runs(onednn, N, C, OC));
  EXPECT_FALSE(cpu::small_gemm_runs(tiles, 256, 768, 2304));  // does not fit: oneDNN either way
  const auto x = random_normal(size_t(N) * C, 1), w = random_normal(size_t(OC) * C, 2, 0.3f);
  const auto b = random_normal(OC, 3), dy = random_normal(size_t(N) * OC, 4);
  std::vector<float> y_tiles(N * OC), y_onednn(N * OC), y_gemm(N * OC), y_dnnl(N * OC);
  cpu::matmul_forward(tiles, y_tiles.data(), x.data(), w.data(), b.data(), N, C, OC);
  cpu::matmul_forward(onednn, y_onednn.data(), x.data(), w.data(), b.data(), N, C, OC);
  cpu::small_gemm_forward(y_gemm.data(), x.data(), w.data(), b.data(), N, C, OC);
  CpuBackend direct;
  cpu::run_matmul(direct.impl(), {N, C, OC, true, MatmulKind::kForward}, x.data(), w.data(),
                  b.data(), y_dnnl.data());
  EXPECT_EQ(y_tiles, y_gemm);
  EXPECT_EQ(y_onednn, y_dnnl);
  for (size_t i = 0; i < y_tiles.size(); ++i) ASSERT_NEAR(y_tiles[i], y_onednn[i], 1e-4f) << i;
  // Backward: dinp accumulated, dweight accumulated, dbias; the oneDNN way's dweight is oneDNN's.
  std::vector<float> dx_t(N * C, 0.5f), dw_t(OC * C, 0.25f), db_t(OC, 0.0f);
  std::vector<float> dx_o = dx_t, dw_o = dw_t, db_o = db_t, dw_d = dw_t;
  cpu::matmul_backward(tiles, dx_t.data(), dw_t.data(), db_t.data(), dy.data(), x.data(), w.data(),
                       N, C, OC);
  cpu::matmul_backward(onednn, dx_o.data(), dw_o.data(), db_o.data(), dy.data(), x.data(), w.data(),
                       N, C, OC);
  cpu::run_matmul(direct.impl(), {N, C, OC, false, MatmulKind::kBackwardWeight}, dy.data(),
                  x.data(), nullptr, dw_d.data());
  EXPECT_EQ(dw_o, dw_d);
  for (size_t i = 0; i < dx_t.size(); ++i) ASSERT_NEAR(dx_t[i], dx_o[i], 1e-4f) << i;
  for (size_t i = 0; i < dw_t.size(); ++i) ASSERT_NEAR(dw_t[i], dw_o[i], 1e-3f) << i;
  for (size_t i = 0; i < db_t.size(); ++i) ASSERT_NEAR(db_t[i], db_o[i], 1e-3f) << i;
}

}  // namespace
}  // namespace nanogpt
