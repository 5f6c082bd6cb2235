// cuda:: element-wise ops (elementwise.cu) against the scalar reference: the MLP activation (GELU
// tanh / erf, ReLU²) forward and backward (overwrite, also in place), residual_forward,
// add_inplace, dropout (the CPU's masks, in place too), convert and scale; float32 and bfloat16
// storage, odd sizes. Outputs are poisoned with NaN first. Skipped without a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "kernels/cuda/ops_cuda.h"
#include "kernels/ops.h"

namespace nanogpt::cuda {
namespace {

using testing_cuda::CudaTest;
using testing_cuda::DeviceTensor;
using testing_cuda::expect_close;
using testing_cuda::random_normal;
using testing_cuda::rounded;

constexpr MlpActivation kKinds[] = {MlpActivation::kTanh, MlpActivation::kExact,
                                    MlpActivation::kRelu2};
constexpr int64_t kSizes[] = {37 * 97, 768 * 5 + 3};

const char* kind_name(MlpActivation k) {
  return k == MlpActivation::kTanh ? "tanh" : k == MlpActivation::kExact ? "exact" : "relu2";
}

// Tolerances of a float32 computation stored in `dtype` against a double reference.
double rtol_of(DType dtype) { return dtype == DType::kF32 ? 1e-5 : 1e-2; }

using CudaElementwise = CudaTest;

TEST_F(CudaElementwise, GeluForward) {
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    for (MlpActivation kind : kKinds) {
      for (int64_t n : kSizes) {
        SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + kind_name(kind) + " n " +
                     std::to_string(n));
        const auto x = rounded(random_normal(n, 1, 2.0f), dtype);
        std::vector<float> want(n);
        ref::gelu_forward(want.data(), x.data(), n, kind);
        DeviceTensor d_x(x, dtype), d_out = DeviceTensor::nan(n, dtype);
        gelu_forward(d_out.ptr(), d_x.ptr(), n, kind);
        expect_close(d_out.download(), want, 1e-6, rtol_of(dtype), "out");
        // In place.
        gelu_forward(d_x.ptr(), d_x.ptr(), n, kind);
        expect_close(d_x.download(), want, 1e-6, rtol_of(dtype), "out in place");
      }
    }
  }
}

TEST_F(CudaElementwise, GeluForwardMixedDtypes) {
  const int64_t n = 37 * 97;
  const auto x = rounded(random_normal(n, 2, 2.0f), DType::kBF16);
  std::vector<float> want(n);
  ref::gelu_forward(want.data(), x.data(), n, MlpActivation::kTanh);
  DeviceTensor d_x(x, DType::kBF16), d_out = DeviceTensor::nan(n, DType::kF32);
  gelu_forward(d_out.ptr(), d_x.ptr(), n, MlpActivation::kTanh);
  expect_close(d_out.download(), want, 1e-6, 1e-5, "bf16 -> f32");
}

TEST_F(CudaElementwise, GeluBackwardOverwrites) {
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    for (MlpActivation kind : kKinds) {
      for (int64_t n : kSizes) {
        SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + kind_name(kind) + " n " +
                     std::to_string(n));
        const auto x = rounded(random_normal(n, 3, 2.0f), dtype);
        const auto dout = rounded(random_normal(n, 4), dtype);
        std::vector<float> want(n, 0.0f);  // the reference accumulates
        ref::gelu_backward(want.data(), x.data(), dout.data(), n, kind);
        DeviceTensor d_x(x, dtype), d_dout(dout, dtype), d_dinp = DeviceTensor::nan(n, dtype);
        gelu_backward(d_dinp.ptr(), d_x.ptr(), d_dout.ptr(), n, kind);
        expect_close(d_dinp.download(), want, 1e-6, rtol_of(dtype), "dinp");
        // In place: dinp aliases dout.
        gelu_backward(d_dout.ptr(), d_x.ptr(), d_dout.ptr(), n, kind);
        expect_close(d_dout.download(), want, 1e-6, rtol_of(dtype), "dinp in place");
      }
    }
  }
}

TEST_F(CudaElementwise, ResidualForward) {
  const int64_t n = 37 * 97;
  const auto a = random_normal(n, 5), b = random_normal(n, 6);
  std::vector<float> want(n);
  ref::residual_forward(want.data(), a.data(), b.data(), n);
  DeviceTensor d_a(a, DType::kF32), d_b(b, DType::kF32), d_out = DeviceTensor::nan(n, DType::kF32);
  residual_forward(d_out.ptr().f32(), d_a.ptr().f32(), d_b.ptr().f32(), n);
  EXPECT_EQ(d_out.download(), want);
}

TEST_F(CudaElementwise, AddInplace) {
  const int64_t n = 768 * 5 + 3;
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const auto acc = random_normal(n, 7), x = rounded(random_normal(n, 8), dtype);
    std::vector<float> want(n);
    for (int64_t i = 0; i < n; ++i) want[i] = acc[i] + x[i];
    DeviceTensor d_acc(acc, DType::kF32), d_x(x, dtype);
    add_inplace(d_acc.ptr().f32(), d_x.ptr(), n);
    EXPECT_EQ(d_acc.download(), want);
  }
}

TEST_F(CudaElementwise, Dropout) {
  const uint64_t seed = 1234;
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    for (float p : {0.0f, 0.1f, 0.5f}) {
      for (int64_t n : kSizes) {
        SCOPED_TRACE(std::string(dtype_name(dtype)) + " p " + std::to_string(p) + " n " +
                     std::to_string(n));
        const auto x = rounded(random_normal(n, 9), dtype);
        auto want = std::vector<float>(n);
        ref::dropout_forward(want.data(), x.data(), n, p, seed);
        want = rounded(want, dtype);
        DeviceTensor d_x(x, dtype), d_out = DeviceTensor::nan(n, dtype);
        dropout_forward(d_out.ptr(), d_x.ptr(), n, p, seed);
        EXPECT_EQ(d_out.download(), want) << "forward";
        // Backward: the same mask (the reference accumulates into zeros).
        std::vector<float> want_d(n, 0.0f);
        ref::dropout_backward(want_d.data(), x.data(), n, p, seed);
        want_d = rounded(want_d, dtype);
        DeviceTensor d_dinp = DeviceTensor::nan(n, dtype);
        dropout_backward(d_dinp.ptr(), d_x.ptr(), n, p, seed);
        EXPECT_EQ(d_dinp.download(), want_d) << "backward";
        // In place.
        dropout_forward(d_x.ptr(), d_x.ptr(), n, p, seed);
        EXPECT_EQ(d_x.download(), want) << "forward in place";
      }
    }
  }
}

TEST_F(CudaElementwise, Convert) {
  const int64_t n = 768 * 5 + 3;
  auto x = random_normal(n, 10, 3.0f);
  x[0] = 0.0f;
  x[1] = -0.0f;
  x[2] = 1e-30f;  // bf16 keeps float's exponent range
  for (DType from : {DType::kF32, DType::kBF16}) {
    for (DType to : {DType::kF32, DType::kBF16}) {
      SCOPED_TRACE(std::string(dtype_name(from)) + " -> " + dtype_name(to));
      const auto src = rounded(x, from);
      DeviceTensor d_src(src, from), d_dst = DeviceTensor::nan(n, to);
      convert(d_dst.ptr(), d_src.ptr(), n);
      EXPECT_EQ(d_dst.download(), rounded(src, to));
    }
  }
}

// Pointers that are not 16-byte aligned (one element into a buffer) take the element loops
// throughout: the same results as the vector path's.
TEST_F(CudaElementwise, UnalignedPointersTakeTheElementLoop) {
  const int64_t n = 768 * 5 + 3;
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const auto x = rounded(random_normal(n, 12, 2.0f), dtype);
    const auto dout = rounded(random_normal(n, 13), dtype);
    std::vector<float> want(n), want_d(n, 0.0f), want_drop(n);
    ref::gelu_forward(want.data(), x.data(), n, MlpActivation::kTanh);
    ref::gelu_backward(want_d.data(), x.data(), dout.data(), n, MlpActivation::kTanh);
    ref::dropout_forward(want_drop.data(), x.data(), n, 0.1f, 99);
    DeviceTensor d_x(x, dtype, 1), d_dout(dout, dtype, 1), d_out = DeviceTensor::nan(n, dtype, 1);
    gelu_forward(d_out.ptr(), d_x.ptr(), n, MlpActivation::kTanh);
    expect_close(d_out.download(), want, 1e-6, rtol_of(dtype), "gelu");
    gelu_backward(d_out.ptr(), d_x.ptr(), d_dout.ptr(), n, MlpActivation::kTanh);
    expect_close(d_out.download(), want_d, 1e-6, rtol_of(dtype), "gelu backward");
    dropout_forward(d_out.ptr(), d_x.ptr(), n, 0.1f, 99);
    EXPECT_EQ(d_out.download(), rounded(want_drop, dtype)) << "dropout";
    DeviceTensor d_f32 =
        DeviceTensor::nan(n, DType::kF32);  // aligned destination, unaligned source
    convert(d_f32.ptr(), d_x.ptr(), n);
    EXPECT_EQ(d_f32.download(), x) << "convert";
  }
}

TEST_F(CudaElementwise, Scale) {
  const int64_t n = 37 * 97;
  const auto x = random_normal(n, 11);
  std::vector<float> want(n);
  for (int64_t i = 0; i < n; ++i) want[i] = x[i] * 0.37f;
  DeviceTensor d_x(x, DType::kF32);
  scale(d_x.ptr().f32(), 0.37f, n);
  EXPECT_EQ(d_x.download(), want);
}

}  // namespace
}  // namespace nanogpt::cuda
