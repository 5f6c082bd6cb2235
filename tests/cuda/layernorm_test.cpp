// cuda::layernorm_forward / residual_layernorm_forward / layernorm_backward (layernorm.cu) against
// the scalar reference: LayerNorm and RMSNorm, with and without bias, float32 and bfloat16 outputs
// (forward) and douts (backward), widths from 97 to GPT-2 XL's 1600, row counts below and above
// the backward's block count (its grid-stride rows); the backward adds into dinp and accumulates
// dweight / dbias, bit-identically on a second run, which also writes dinp's copy over dout.
// Skipped without a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <iterator>
#include <string>
#include <tuple>
#include <vector>

#include "cuda_test_util.h"
#include "kernels/cuda/ops_cuda.h"
#include "kernels/ops.h"

namespace nanogpt::cuda {
namespace {

using testing_cuda::CudaTestWithParam;
using testing_cuda::DeviceTensor;
using testing_cuda::expect_close;
using testing_cuda::max_abs;
using testing_cuda::random_normal;
using testing_cuda::rounded;

struct Shape {
  int64_t N;
  int C;
};
// 97: the element kernels; multiples of 4: the float4 kernels (36: one group a lane, lanes idle;
// 384: W2's width; 1600: the widest forward tile with idle lanes, the backward's element kernel;
// 2048: the widest forward tile, full).
const Shape kShapes[] = {{37, 97},    {64, 768},  {5, 1600}, {2000, 97},
                         {1200, 768}, {300, 384}, {3, 36},   {50, 2048}};

// (shape, norm, bias, dtype of out / dout)
using Param = std::tuple<int, NormKind, bool, DType>;

class CudaLayerNorm : public CudaTestWithParam<Param> {};

std::vector<float> diff(const std::vector<float>& a, const std::vector<float>& b) {
  std::vector<float> d(a.size());
  for (size_t i = 0; i < a.size(); ++i) d[i] = a[i] - b[i];
  return d;
}

TEST_P(CudaLayerNorm, ForwardMatchesReference) {
  const auto [shape, norm, with_bias, dtype] = GetParam();
  const int64_t N = kShapes[shape].N;
  const int C = kShapes[shape].C;
  auto x = random_normal(N * C, 1, 2.0f);
  for (auto& v : x) v += 0.5f;  // nonzero mean
  const auto w = random_normal(C, 2), b = random_normal(C, 3);
  const float* bias = with_bias ? b.data() : nullptr;
  std::vector<float> want(N * C), want_mean(N), want_rstd(N);
  ref::layernorm_forward(want.data(), want_mean.data(), want_rstd.data(), x.data(), w.data(), bias,
                         N, C, norm);

  DeviceTensor d_x(x, DType::kF32), d_w(w, DType::kF32), d_b(b, DType::kF32);
  DeviceTensor d_out = DeviceTensor::nan(N * C, dtype);
  DeviceTensor d_mean = DeviceTensor::nan(N, DType::kF32),
               d_rstd = DeviceTensor::nan(N, DType::kF32);
  const float* d_bias = with_bias ? d_b.ptr().f32() : nullptr;
  layernorm_forward(d_out.ptr(), d_mean.ptr().f32(), d_rstd.ptr().f32(), d_x.ptr().f32(),
                    d_w.ptr().f32(), d_bias, N, C, norm);
  const double scale = max_abs(want);
  const double rtol = dtype == DType::kF32 ? 1e-5 : 1e-2;
  expect_close(d_out.download(), want, 1e-5 * scale, rtol, "out");
  expect_close(d_mean.download(), want_mean, 1e-5, 1e-5, "mean");
  expect_close(d_rstd.download(), want_rstd, 0, 1e-5, "rstd");

  // The residual-fused forward: res = a + b exactly, out as layernorm(res).
  const auto a = random_normal(N * C, 4);
  std::vector<float> bb(N * C);
  for (int64_t i = 0; i < N * C; ++i) bb[i] = x[i] - a[i];
  std::vector<float> res(N * C);
  for (int64_t i = 0; i < N * C; ++i) res[i] = a[i] + bb[i];
  ref::layernorm_forward(want.data(), want_mean.data(), want_rstd.data(), res.data(), w.data(),
                         bias, N, C, norm);
  DeviceTensor d_a(a, DType::kF32), d_bb(bb, DType::kF32),
      d_res = DeviceTensor::nan(N * C, DType::kF32);
  DeviceTensor d_out2 = DeviceTensor::nan(N * C, dtype);
  DeviceTensor d_mean2 = DeviceTensor::nan(N, DType::kF32),
               d_rstd2 = DeviceTensor::nan(N, DType::kF32);
  residual_layernorm_forward(d_res.ptr().f32(), d_out2.ptr(), d_mean2.ptr().f32(),
                             d_rstd2.ptr().f32(), d_a.ptr().f32(), d_bb.ptr().f32(),
                             d_w.ptr().f32(), d_bias, N, C, norm);
  EXPECT_EQ(d_res.download(), res) << "res";
  expect_close(d_out2.download(), want, 1e-5 * max_abs(want), rtol, "fused out");
  expect_close(d_mean2.download(), want_mean, 1e-5, 1e-5, "fused mean");
  expect_close(d_rstd2.download(), want_rstd, 0, 1e-5, "fused rstd");
}

TEST_P(CudaLayerNorm, BackwardMatchesReference) {
  const auto [shape, norm, with_bias, dtype] = GetParam();
  const int64_t N = kShapes[shape].N;
  const int C = kShapes[shape].C;
  auto x = random_normal(N * C, 11, 2.0f);
  for (auto& v : x) v += 0.5f;
  const auto w = random_normal(C, 12), b = random_normal(C, 13);
  std::vector<float> out(N * C), mean(N), rstd(N);
  ref::layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C,
                         norm);
  const auto dout = rounded(random_normal(N * C, 14), dtype);
  const auto dinp0 = random_normal(N * C, 15), dw0 = random_normal(C, 16),
             db0 = random_normal(C, 17);
  auto want_dinp = dinp0, want_dw = dw0, want_db = db0;
  ref::layernorm_backward(want_dinp.data(), want_dw.data(), with_bias ? want_db.data() : nullptr,
                          dout.data(), x.data(), w.data(), mean.data(), rstd.data(), N, C, norm);

  DeviceTensor d_x(x, DType::kF32), d_w(w, DType::kF32), d_mean(mean, DType::kF32),
      d_rstd(rstd, DType::kF32);
  std::vector<float> first_dinp, first_dw, first_db;
  for (int run = 0; run < 2; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    DeviceTensor d_dinp(dinp0, DType::kF32), d_dw(dw0, DType::kF32), d_db(db0, DType::kF32);
    // The second run also writes dinp's copy in dout's dtype, over dout itself (as the GPU
    // model's backward does): the same dinp, and the copy its rounding.
    DeviceTensor d_dout_run(dout, dtype);
    layernorm_backward(ctx(), d_dinp.ptr().f32(), d_dw.ptr().f32(),
                       with_bias ? d_db.ptr().f32() : nullptr, d_dout_run.ptr(), d_x.ptr().f32(),
                       d_w.ptr().f32(), d_mean.ptr().f32(), d_rstd.ptr().f32(), N, C, norm,
                       run == 1 ? d_dout_run.ptr() : TypedPtr{});
    ctx().synchronize("layernorm_backward");
    const auto got_dinp = d_dinp.download(), got_dw = d_dw.download(), got_db = d_db.download();
    EXPECT_EQ(d_dout_run.download(), run == 1 ? rounded(got_dinp, dtype) : dout) << "dinp's copy";
    expect_close(got_dinp, want_dinp, 1e-5 * max_abs(diff(want_dinp, dinp0)), 1e-5, "dinp");
    expect_close(got_dw, want_dw, 1e-5 * max_abs(diff(want_dw, dw0)), 1e-5, "dweight");
    if (with_bias) {
      expect_close(got_db, want_db, 1e-5 * max_abs(diff(want_db, db0)), 1e-5, "dbias");
    } else {
      EXPECT_EQ(got_db, db0) << "dbias written though null";
    }
    if (run == 0) {
      first_dinp = got_dinp;
      first_dw = got_dw;
      first_db = got_db;
    } else {  // deterministic: the same bits
      EXPECT_EQ(got_dinp, first_dinp);
      EXPECT_EQ(got_dw, first_dw);
      EXPECT_EQ(got_db, first_db);
    }
  }
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  const Shape& shape = kShapes[std::get<0>(info.param)];
  std::string name = "N";
  name += std::to_string(shape.N);
  name += "_C";
  name += std::to_string(shape.C);
  name += std::get<1>(info.param) == NormKind::kRmsNorm ? "_rms" : "_ln";
  name += std::get<2>(info.param) ? "_bias_" : "_nobias_";
  name += dtype_name(std::get<3>(info.param));
  return name;
}

INSTANTIATE_TEST_SUITE_P(
    All, CudaLayerNorm,
    ::testing::Combine(::testing::Range(0, static_cast<int>(std::size(kShapes))),
                       ::testing::Values(NormKind::kLayerNorm, NormKind::kRmsNorm),
                       ::testing::Bool(), ::testing::Values(DType::kF32, DType::kBF16)),
    param_name);

}  // namespace
}  // namespace nanogpt::cuda
