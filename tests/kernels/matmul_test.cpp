// cpu::matmul (oneDNN; own GEMV for N == 1; small_gemm.h for small shapes) vs ref::matmul, forward
// and accumulating backward, on GPT-ish and odd shapes with and without bias, plus primitive-cache
// reuse across calls.
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "dispatch_test_util.h"
#include "kernel_test_util.h"
#include "kernels/cpu_backend.h"
#include "kernels/ops.h"

namespace nanogpt {
namespace {

using testing::abs_of;
using testing::dot_tolerance;
using testing::expect_within;
using testing::random_normal;

class MatmulTest : public ::testing::TestWithParam<std::tuple<int, int, int, bool>> {};

TEST_P(MatmulTest, ForwardAndBackwardMatchReference) {
  testing::for_each_target([&](const std::string&) {  // the GEMV and column sums per target
    const auto [N, C, OC, with_bias] = GetParam();
    CpuBackend ctx;
    const auto inp = random_normal(size_t(N) * C, 1);       // (N,C)
    const auto w = random_normal(size_t(OC) * C, 2, 0.2f);  // (OC,C)
    const auto b = random_normal(OC, 3);                    // (OC)
    const float* bias = with_bias ? b.data() : nullptr;

    std::vector<float> out(size_t(N) * OC), want(size_t(N) * OC), mag(size_t(N) * OC);
    for (int rep = 0; rep < 2; ++rep) {  // second call reuses the cached primitive
      cpu::matmul_forward(ctx, out.data(), inp.data(), w.data(), bias, N, C, OC);
    }
    ref::matmul_forward(want.data(), inp.data(), w.data(), bias, N, C, OC);
    const auto ainp = abs_of(inp), aw = abs_of(w), ab = abs_of(b);
    ref::matmul_forward(mag.data(), ainp.data(), aw.data(), with_bias ? ab.data() : nullptr, N, C,
                        OC);
    expect_within(out, want, dot_tolerance(mag, want, C + 1), "out");

    // Backward, accumulating into nonzero grads.
    const auto dout = random_normal(size_t(N) * OC, 4);  // (N,OC)
    const auto dinp0 = random_normal(size_t(N) * C, 5);
    const auto dw0 = random_normal(size_t(OC) * C, 6);
    const auto db0 = random_normal(OC, 7);
    auto dinp = dinp0, dw = dw0, db = db0;
    auto dinp_r = dinp0, dw_r = dw0, db_r = db0;
    cpu::matmul_backward(ctx, dinp.data(), dw.data(), with_bias ? db.data() : nullptr, dout.data(),
                         inp.data(), w.data(), N, C, OC);
    ref::matmul_backward(dinp_r.data(), dw_r.data(), with_bias ? db_r.data() : nullptr, dout.data(),
                         inp.data(), w.data(), N, C, OC);
    // Magnitudes: same products on absolute values, plus the pre-filled value.
    const auto adout = abs_of(dout);
    auto mdinp = abs_of(dinp0), mdw = abs_of(dw0), mdb = abs_of(db0);
    ref::matmul_backward(mdinp.data(), mdw.data(), mdb.data(), adout.data(), ainp.data(), aw.data(),
                         N, C, OC);
    expect_within(dinp, dinp_r, dot_tolerance(mdinp, dinp_r, OC + 1), "dinp");
    expect_within(dw, dw_r, dot_tolerance(mdw, dw_r, N + 1), "dweight");
    if (with_bias) {
      expect_within(db, db_r, dot_tolerance(mdb, db_r, N + 1), "dbias");
    } else {
      expect_within(db, db0, 0.0, "dbias untouched");
    }

    // Overwriting dinp (whatever it held: NaN here) gives the accumulating result from zero.
    auto dinp_set = std::vector<float>(dinp0.size(), NAN),
         dinp_zero = std::vector<float>(dinp0.size());
    auto dw3 = dw0, db3 = db0, dw4 = dw0, db4 = db0;
    cpu::matmul_backward_overwrite(ctx, dinp_set.data(), dw3.data(),
                                   with_bias ? db3.data() : nullptr, dout.data(), inp.data(),
                                   w.data(), N, C, OC);
    cpu::matmul_backward(ctx, dinp_zero.data(), dw4.data(), with_bias ? db4.data() : nullptr,
                         dout.data(), inp.data(), w.data(), N, C, OC);
    EXPECT_EQ(dinp_set, dinp_zero) << "dinp overwritten vs accumulated from zero";
    EXPECT_EQ(dw3, dw4) << "dweight (dinp overwritten)";
    EXPECT_EQ(db3, db4) << "dbias (dinp overwritten)";

    // dinp == nullptr: only the parameter grads.
    auto dw2 = dw0;
    cpu::matmul_backward(ctx, nullptr, dw2.data(), nullptr, dout.data(), inp.data(), w.data(), N, C,
                         OC);
    expect_within(dw2, dw_r, dot_tolerance(mdw, dw_r, N + 1), "dweight (dinp null)");
  });
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, MatmulTest,
    ::testing::Values(std::make_tuple(1, 48, 17, true), std::make_tuple(1, 771, 37, false),
                      std::make_tuple(1, 768, 2304, true), std::make_tuple(1, 3072, 8, true),
                      std::make_tuple(37, 48, 144, false), std::make_tuple(37, 48, 144, true),
                      std::make_tuple(64, 96, 384, true), std::make_tuple(130, 64, 101, false),
                      std::make_tuple(256, 128, 512, true)));

}  // namespace
}  // namespace nanogpt
