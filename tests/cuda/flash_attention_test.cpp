// cuda::flash_attention_forward / flash_attention_backward (bfloat16, head size 64, tensor cores,
// no T x T matrix) against the 16-bit scalar reference of ops_lowp.h (ref::attention_*, whose
// dropout masks are drawn per group of sequences as the GPU draws them): out, lse and dqkv (and
// each of dq, dk, dv), without and with dropout, for sequence lengths that are and are not
// multiples of the 64-row tiles. Outputs are poisoned with NaN first; the reference's backward
// accumulates, so it starts from zeros. The backward must be deterministic (bit-identical on a
// second run). flash_attention_supported needs no GPU; everything else skips without one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "kernels/cuda/ops_cuda.h"
#include "kernels/ops.h"
#include "kernels/ops_lowp.h"

namespace nanogpt::cuda {
namespace {

using testing_cuda::CudaTest;
using testing_cuda::DeviceTensor;
using testing_cuda::poisoned_f32;
using testing_cuda::random_vector;
using testing_cuda::relative_error;
using testing_cuda::rounded;
using testing_cuda::to_bf16;

constexpr double kTol = 2e-2;     // relative error of out and dqkv (bf16 storage, bf16 P and dS)
constexpr double kLseTol = 1e-2;  // absolute error of lse

// err < tol; with NANOGPT_TEST_VERBOSE set, prints the error (margins).
void expect_below(double err, double tol, const std::string& what) {
  if (std::getenv("NANOGPT_TEST_VERBOSE")) {
    std::printf("    %-40s err %.3g (tol %.3g)\n", what.c_str(), err, tol);
  }
  EXPECT_LT(err, tol) << what;
}

// Part `part` (0 q, 1 k, 2 v) of a (B*T, 3C) gradient.
std::vector<float> qkv_part(const std::vector<float>& g, int64_t BT, int C, int part) {
  std::vector<float> r;
  r.reserve(static_cast<size_t>(BT) * C);
  for (int64_t bt = 0; bt < BT; ++bt) {
    for (int i = 0; i < C; ++i) r.push_back(g[bt * 3 * C + part * C + i]);
  }
  return r;
}

// max |got - want| over the part, relative to the largest |want| of the whole dqkv (a part whose
// exact value is 0, as dq and dk at T = 1, is then judged against the gradient's scale).
double part_error(const std::vector<float>& got, const std::vector<float>& want, double scale) {
  double err = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double e = std::fabs(static_cast<double>(got[i]) - want[i]);
    if (!(e == e)) return INFINITY;
    err = std::fmax(err, e);
  }
  return err / std::fmax(scale, 1e-30);
}

class CudaFlashAttention : public CudaTest {
 protected:
  // qkv ~ N(0, stddev^2) (a larger stddev makes the running max of the forward's rows grow by
  // more than its rescale threshold, exercising the rescale path).
  void check(int B, int T, int C, int NH, float p, float stddev = 1.0f) {
    SCOPED_TRACE("B " + std::to_string(B) + " T " + std::to_string(T) + " C " + std::to_string(C) +
                 " NH " + std::to_string(NH) + " dropout " + std::to_string(p) + " stddev " +
                 std::to_string(stddev));
    ASSERT_TRUE(flash_attention_supported(DType::kBF16, C, NH));
    const uint64_t seed = 1234;
    const int64_t btc = static_cast<int64_t>(B) * T * C;
    const int64_t rows = static_cast<int64_t>(B) * NH * T;
    const auto qkv = rounded(random_vector(3 * btc, 31 + T, stddev), DType::kBF16);
    const auto dout = rounded(random_vector(btc, 32 + T, 1.0f), DType::kBF16);
    const auto qkv16 = to_bf16(qkv), dout16 = to_bf16(dout);

    std::vector<float> want_out(static_cast<size_t>(btc)), want_lse(static_cast<size_t>(rows));
    std::vector<float> want_dqkv(static_cast<size_t>(3 * btc), 0.0f);  // the reference accumulates
    ref::attention_forward(TypedPtr(want_out.data()), want_lse.data(),
                           ConstTypedPtr(qkv16.data(), DType::kBF16), B, T, C, NH, p, seed);
    ref::attention_backward(TypedPtr(want_dqkv.data()), ConstTypedPtr(dout16.data(), DType::kBF16),
                            ConstTypedPtr(want_out.data()), want_lse.data(),
                            ConstTypedPtr(qkv16.data(), DType::kBF16), B, T, C, NH, p, seed);

    DeviceTensor d_qkv(qkv, DType::kBF16), d_dout(dout, DType::kBF16);
    DeviceTensor d_out = DeviceTensor::nan(btc, DType::kBF16);
    auto d_lse = poisoned_f32(static_cast<size_t>(rows));
    flash_attention_forward(ctx(), d_out.ptr(), d_lse.data(), d_qkv.ptr(), B, T, C, NH, p, seed);
    ctx().synchronize("flash_attention_forward");
    expect_below(relative_error(d_out.download(), want_out), kTol, "out");
    const auto got_lse = d_lse.download();
    double lse_err = 0;
    for (size_t i = 0; i < got_lse.size(); ++i) {
      const double e = std::fabs(static_cast<double>(got_lse[i]) - want_lse[i]);
      lse_err = e == e ? std::fmax(lse_err, e) : INFINITY;
    }
    expect_below(lse_err, kLseTol, "lse (absolute)");

    // The backward from the GPU's own out and lse (out enters through D = rowsum(dout * out)).
    DeviceTensor d_dqkv = DeviceTensor::nan(3 * btc, DType::kBF16);
    flash_attention_backward(ctx(), d_dqkv.ptr(), d_dout.ptr(), d_out.ptr(), d_lse.data(),
                             d_qkv.ptr(), B, T, C, NH, p, seed);
    ctx().synchronize("flash_attention_backward");
    const auto got_dqkv = d_dqkv.download();
    expect_below(relative_error(got_dqkv, want_dqkv), kTol, "dqkv");
    // Each of dq, dk, dv on its own (a wrong one could hide in the norm of the others).
    const double scale = testing_cuda::max_abs(want_dqkv);
    const int64_t BT = static_cast<int64_t>(B) * T;
    for (int part = 0; part < 3; ++part) {
      expect_below(
          part_error(qkv_part(got_dqkv, BT, C, part), qkv_part(want_dqkv, BT, C, part), scale),
          kTol, std::string("d") + "qkv"[part]);
    }

    // Deterministic: a second backward gives the same bits.
    DeviceTensor d_dqkv2 = DeviceTensor::nan(3 * btc, DType::kBF16);
    flash_attention_backward(ctx(), d_dqkv2.ptr(), d_dout.ptr(), d_out.ptr(), d_lse.data(),
                             d_qkv.ptr(), B, T, C, NH, p, seed);
    ctx().synchronize("flash_attention_backward (again)");
    const auto again = d_dqkv2.download();
    ASSERT_EQ(again.size(), got_dqkv.size());
    EXPECT_EQ(std::memcmp(again.data(), got_dqkv.data(), again.size() * sizeof(float)), 0)
        << "the backward is not deterministic";
  }
};

TEST(CudaFlashAttentionSupport, BF16HeadSize64Only) {
  EXPECT_TRUE(flash_attention_supported(DType::kBF16, 768, 12));
  EXPECT_TRUE(flash_attention_supported(DType::kBF16, 64, 1));
  EXPECT_FALSE(flash_attention_supported(DType::kF32, 768, 12));
  EXPECT_FALSE(flash_attention_supported(DType::kF16, 768, 12));
  EXPECT_FALSE(flash_attention_supported(DType::kBF16, 768, 6));  // head size 128
  EXPECT_FALSE(flash_attention_supported(DType::kBF16, 96, 3));   // head size 32
  EXPECT_FALSE(flash_attention_supported(DType::kBF16, 100, 3));  // C not a multiple of NH
  EXPECT_FALSE(flash_attention_supported(DType::kBF16, 0, 0));
}

TEST_F(CudaFlashAttention, SmallOddT) {
  for (float p : {0.0f, 0.1f}) check(2, 67, 128, 2, p);
}

TEST_F(CudaFlashAttention, MultipleTiles) {
  for (float p : {0.0f, 0.1f}) check(3, 256, 192, 3, p);
}

TEST_F(CudaFlashAttention, SingleToken) {
  for (float p : {0.0f, 0.1f}) check(1, 1, 64, 1, p);
}

TEST_F(CudaFlashAttention, Gpt2Shape) {
  for (float p : {0.0f, 0.1f}) check(2, 1024, 768, 12, p);
}

// Large scores: the forward's running max grows by more than its lazy-rescale threshold.
TEST_F(CudaFlashAttention, LargeScoresRescale) {
  for (float p : {0.0f, 0.1f}) check(2, 300, 128, 2, p, 3.0f);
}

}  // namespace
}  // namespace nanogpt::cuda
