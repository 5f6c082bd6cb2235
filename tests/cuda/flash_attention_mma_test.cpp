// cuda::flash_attention_forward_mma / flash_attention_backward_mma (flash_attention_mma.cu: the
// flash attention on mma.sync fragments) against the 16-bit scalar reference of ops_lowp.h (the
// checks of flash_attention_test.cpp: out, lse, dqkv and each of dq, dk, dv, without and with
// dropout, sequence lengths on and off the tiles, a bit-identical second backward), against the
// wmma kernels of flash_attention.cu on the GPT-2 shape, and a timing report of both (printed, not
// asserted). Everything skips without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
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
using testing_cuda::median_ms;
using testing_cuda::poisoned_f32;
using testing_cuda::random_vector;
using testing_cuda::relative_error;
using testing_cuda::rounded;
using testing_cuda::to_bf16;

constexpr double kTol = 2e-2;      // relative error of out and dqkv against the reference
constexpr double kLseTol = 1e-2;   // absolute error of lse
constexpr double kWmmaTol = 1e-2;  // relative difference from the wmma kernels

void expect_below(double err, double tol, const std::string& what) {
  if (std::getenv("NANOGPT_TEST_VERBOSE")) {
    std::printf("    %-40s err %.3g (tol %.3g)\n", what.c_str(), err, tol);
  }
  EXPECT_LT(err, tol) << what;
}

std::vector<float> qkv_part(const std::vector<float>& g, int64_t BT, int C, int part) {
  std::vector<float> r;
  r.reserve(static_cast<size_t>(BT) * C);
  for (int64_t bt = 0; bt < BT; ++bt) {
    for (int i = 0; i < C; ++i) r.push_back(g[bt * 3 * C + part * C + i]);
  }
  return r;
}

double part_error(const std::vector<float>& got, const std::vector<float>& want, double scale) {
  double err = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double e = std::fabs(static_cast<double>(got[i]) - want[i]);
    if (!(e == e)) return INFINITY;
    err = std::fmax(err, e);
  }
  return err / std::fmax(scale, 1e-30);
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double err = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double e = std::fabs(static_cast<double>(a[i]) - b[i]);
    err = e == e ? std::fmax(err, e) : INFINITY;
  }
  return err;
}

class CudaFlashAttentionMma : public CudaTest {
 protected:
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
    flash_attention_forward_mma(ctx(), d_out.ptr(), d_lse.data(), d_qkv.ptr(), B, T, C, NH, p,
                                seed);
    ctx().synchronize("flash_attention_forward_mma");
    expect_below(relative_error(d_out.download(), want_out), kTol, "out");
    expect_below(max_abs_diff(d_lse.download(), want_lse), kLseTol, "lse (absolute)");

    DeviceTensor d_dqkv = DeviceTensor::nan(3 * btc, DType::kBF16);
    flash_attention_backward_mma(ctx(), d_dqkv.ptr(), d_dout.ptr(), d_out.ptr(), d_lse.data(),
                                 d_qkv.ptr(), B, T, C, NH, p, seed);
    ctx().synchronize("flash_attention_backward_mma");
    const auto got_dqkv = d_dqkv.download();
    expect_below(relative_error(got_dqkv, want_dqkv), kTol, "dqkv");
    const double scale = testing_cuda::max_abs(want_dqkv);
    const int64_t BT = static_cast<int64_t>(B) * T;
    for (int part = 0; part < 3; ++part) {
      expect_below(
          part_error(qkv_part(got_dqkv, BT, C, part), qkv_part(want_dqkv, BT, C, part), scale),
          kTol, std::string("d") + "qkv"[part]);
    }

    // Deterministic: a second forward and backward give the same bits.
    DeviceTensor d_out2 = DeviceTensor::nan(btc, DType::kBF16);
    flash_attention_forward_mma(ctx(), d_out2.ptr(), d_lse.data(), d_qkv.ptr(), B, T, C, NH, p,
                                seed);
    DeviceTensor d_dqkv2 = DeviceTensor::nan(3 * btc, DType::kBF16);
    flash_attention_backward_mma(ctx(), d_dqkv2.ptr(), d_dout.ptr(), d_out.ptr(), d_lse.data(),
                                 d_qkv.ptr(), B, T, C, NH, p, seed);
    ctx().synchronize("flash_attention_*_mma (again)");
    const auto out1 = d_out.download(), out2 = d_out2.download();
    EXPECT_EQ(std::memcmp(out1.data(), out2.data(), out1.size() * sizeof(float)), 0)
        << "the forward is not deterministic";
    const auto again = d_dqkv2.download();
    ASSERT_EQ(again.size(), got_dqkv.size());
    EXPECT_EQ(std::memcmp(again.data(), got_dqkv.data(), again.size() * sizeof(float)), 0)
        << "the backward is not deterministic";
  }
};

TEST_F(CudaFlashAttentionMma, SmallOddT) {
  for (float p : {0.0f, 0.1f}) check(2, 67, 128, 2, p);
}

TEST_F(CudaFlashAttentionMma, OddLengths) {
  for (int T : {37, 64, 65, 127, 129, 130}) {
    for (float p : {0.0f, 0.1f}) check(2, T, 128, 2, p);
  }
}

TEST_F(CudaFlashAttentionMma, MultipleTiles) {
  for (float p : {0.0f, 0.1f}) check(3, 256, 192, 3, p);
}

TEST_F(CudaFlashAttentionMma, SingleToken) {
  for (float p : {0.0f, 0.1f}) check(1, 1, 64, 1, p);
}

TEST_F(CudaFlashAttentionMma, Gpt2Shape) {
  for (float p : {0.0f, 0.1f}) check(2, 1024, 768, 12, p);
}

// Large scores: the forward's running max grows by more than its lazy-rescale threshold.
TEST_F(CudaFlashAttentionMma, LargeScoresRescale) {
  for (float p : {0.0f, 0.1f}) check(2, 300, 128, 2, p, 3.0f);
}

// The mma kernels against the wmma kernels of flash_attention.cu on the GPT-2 shape.
TEST_F(CudaFlashAttentionMma, MatchesWmma) {
  const int B = 2, T = 1024, C = 768, NH = 12;
  const uint64_t seed = 77;
  const int64_t btc = static_cast<int64_t>(B) * T * C;
  const int64_t rows = static_cast<int64_t>(B) * NH * T;
  const auto qkv = rounded(random_vector(3 * btc, 5, 1.0f), DType::kBF16);
  const auto dout = rounded(random_vector(btc, 6, 1.0f), DType::kBF16);
  DeviceTensor d_qkv(qkv, DType::kBF16), d_dout(dout, DType::kBF16);
  for (float p : {0.0f, 0.1f}) {
    SCOPED_TRACE("dropout " + std::to_string(p));
    DeviceTensor out_w = DeviceTensor::nan(btc, DType::kBF16);
    DeviceTensor out_m = DeviceTensor::nan(btc, DType::kBF16);
    auto lse_w = poisoned_f32(static_cast<size_t>(rows));
    auto lse_m = poisoned_f32(static_cast<size_t>(rows));
    DeviceTensor dqkv_w = DeviceTensor::nan(3 * btc, DType::kBF16);
    DeviceTensor dqkv_m = DeviceTensor::nan(3 * btc, DType::kBF16);
    flash_attention_forward(ctx(), out_w.ptr(), lse_w.data(), d_qkv.ptr(), B, T, C, NH, p, seed);
    flash_attention_forward_mma(ctx(), out_m.ptr(), lse_m.data(), d_qkv.ptr(), B, T, C, NH, p,
                                seed);
    // Both backwards from the wmma forward's out and lse: only the backward kernels differ.
    flash_attention_backward(ctx(), dqkv_w.ptr(), d_dout.ptr(), out_w.ptr(), lse_w.data(),
                             d_qkv.ptr(), B, T, C, NH, p, seed);
    flash_attention_backward_mma(ctx(), dqkv_m.ptr(), d_dout.ptr(), out_w.ptr(), lse_w.data(),
                                 d_qkv.ptr(), B, T, C, NH, p, seed);
    ctx().synchronize("wmma vs mma");
    expect_below(relative_error(out_m.download(), out_w.download()), kWmmaTol, "out mma vs wmma");
    expect_below(max_abs_diff(lse_m.download(), lse_w.download()), kWmmaTol,
                 "lse mma vs wmma (absolute)");
    const auto gw = dqkv_w.download(), gm = dqkv_m.download();
    expect_below(relative_error(gm, gw), kWmmaTol, "dqkv mma vs wmma");
    const double scale = testing_cuda::max_abs(gw);
    for (int part = 0; part < 3; ++part) {
      expect_below(part_error(qkv_part(gm, B * T, C, part), qkv_part(gw, B * T, C, part), scale),
                   kWmmaTol, std::string("d") + "qkv"[part] + " mma vs wmma");
    }
  }
}

TEST_F(CudaFlashAttentionMma, TimingReport) {
  const int B = 16, T = 1024, C = 768, NH = 12;
  const int64_t btc = static_cast<int64_t>(B) * T * C;
  const int64_t rows = static_cast<int64_t>(B) * NH * T;
  const auto qkv = rounded(random_vector(3 * btc, 8, 1.0f), DType::kBF16);
  const auto dout = rounded(random_vector(btc, 9, 1.0f), DType::kBF16);
  DeviceTensor d_qkv(qkv, DType::kBF16), d_dout(dout, DType::kBF16);
  DeviceTensor out = DeviceTensor::nan(btc, DType::kBF16);
  DeviceTensor dqkv = DeviceTensor::nan(3 * btc, DType::kBF16);
  auto lse = poisoned_f32(static_cast<size_t>(rows));
  const double flop_half = 2.0 * B * NH * static_cast<double>(T) * T * 64 / 2;  // one product
  for (float p : {0.0f, 0.1f}) {
    const double fw = median_ms([&] {
      flash_attention_forward(ctx(), out.ptr(), lse.data(), d_qkv.ptr(), B, T, C, NH, p, 1);
    });
    const double bw = median_ms([&] {
      flash_attention_backward(ctx(), dqkv.ptr(), d_dout.ptr(), out.ptr(), lse.data(), d_qkv.ptr(),
                               B, T, C, NH, p, 1);
    });
    const double fm = median_ms([&] {
      flash_attention_forward_mma(ctx(), out.ptr(), lse.data(), d_qkv.ptr(), B, T, C, NH, p, 1);
    });
    const double bm = median_ms([&] {
      flash_attention_backward_mma(ctx(), dqkv.ptr(), d_dout.ptr(), out.ptr(), lse.data(),
                                   d_qkv.ptr(), B, T, C, NH, p, 1);
    });
    ctx().synchronize("timing");
    std::printf(
        "[ timing ] flash attention B %d T %d C %d NH %d dropout %.1f:\n"
        "[ timing ]   wmma: forward %.3f ms (%.0f TFLOP/s), backward %.3f ms (%.0f TFLOP/s), "
        "total %.3f ms\n"
        "[ timing ]   mma:  forward %.3f ms (%.0f TFLOP/s), backward %.3f ms (%.0f TFLOP/s), "
        "total %.3f ms\n",
        B, T, C, NH, p, fw, 2 * flop_half / fw * 1e-9, bw, 5 * flop_half / bw * 1e-9, fw + bw, fm,
        2 * flop_half / fm * 1e-9, bm, 5 * flop_half / bm * 1e-9, fm + bm);
  }
}

}  // namespace
}  // namespace nanogpt::cuda
