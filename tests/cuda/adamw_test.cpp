// cuda::adamw_update and cuda::sum_squares (adamw.cu): the AdamW step against the formula of
// ops_cuda.h evaluated in double (bias corrections, decoupled weight decay, grad_scale), over a
// few steps, with and without the bfloat16 params copy (round to nearest of the updated float32
// params); sum_squares against a double sum, deterministic across calls. Skipped without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/float16.h"
#include "cuda_test_util.h"
#include "kernels/cuda/ops_cuda.h"

namespace nanogpt::cuda {
namespace {

using testing_cuda::CudaTest;
using testing_cuda::DeviceTensor;
using testing_cuda::expect_close;
using testing_cuda::random_normal;

using CudaAdamW = CudaTest;

// One step of ops_cuda.h's formula in double, on float state (rounded back to float).
void adamw_reference(std::vector<float>& p, std::vector<float>& m, std::vector<float>& v,
                     const std::vector<float>& g, const AdamWArgs& a) {
  const double t = static_cast<double>(a.step);
  const double bc1 = 1.0 - std::pow(double{a.beta1}, t), bc2 = 1.0 - std::pow(double{a.beta2}, t);
  for (size_t i = 0; i < p.size(); ++i) {
    const double gi = double{g[i]} * a.grad_scale;
    double pi = p[i];
    pi -= double{a.lr} * a.weight_decay * pi;
    const double mi = a.beta1 * double{m[i]} + (1.0 - a.beta1) * gi;
    const double vi = a.beta2 * double{v[i]} + (1.0 - a.beta2) * gi * gi;
    pi -= double{a.lr} * (mi / bc1) / (std::sqrt(vi / bc2) + a.eps);
    p[i] = static_cast<float>(pi);
    m[i] = static_cast<float>(mi);
    v[i] = static_cast<float>(vi);
  }
}

// offset: elements into each buffer (1: unaligned, the element loop; 0: the 16-byte groups).
void check_steps(int64_t n, const AdamWArgs& base, bool with_lowp, int64_t offset = 0) {
  SCOPED_TRACE("n " + std::to_string(n) + " wd " + std::to_string(base.weight_decay) +
               " grad_scale " + std::to_string(base.grad_scale) + (with_lowp ? " bf16 copy" : "") +
               " offset " + std::to_string(offset));
  auto p = random_normal(n, 31), m = random_normal(n, 32, 0.01f), v = random_normal(n, 33, 0.01f);
  for (auto& x : v) x *= x;  // v >= 0
  DeviceTensor d_p(p, DType::kF32, offset), d_m(m, DType::kF32, offset),
      d_v(v, DType::kF32, offset);
  DeviceTensor d_lowp = DeviceTensor::nan(n, DType::kBF16, offset);
  for (int s = 0; s < 3; ++s) {
    AdamWArgs a = base;
    a.step = base.step + s;
    const auto g = random_normal(n, 40 + s);
    DeviceTensor d_g(g, DType::kF32, offset);
    adamw_update(d_p.ptr().f32(), with_lowp ? d_lowp.ptr() : TypedPtr{}, d_m.ptr().f32(),
                 d_v.ptr().f32(), d_g.ptr().f32(), n, a);
    adamw_reference(p, m, v, g, a);
    const auto got_p = d_p.download(), got_m = d_m.download(), got_v = d_v.download();
    // A few float roundings of p (|p| ~ 1) and of the update (~lr).
    expect_close(got_p, p, 1e-8, 1e-6, "params step " + std::to_string(a.step));
    expect_close(got_m, m, 1e-8, 1e-6, "m");
    expect_close(got_v, v, 1e-12, 1e-6, "v");
    // Continue from the GPU's state so that the float roundings do not compound.
    p = got_p;
    m = got_m;
    v = got_v;
    const auto got_lowp = d_lowp.download();
    for (int64_t i = 0; i < n; ++i) {
      if (with_lowp) {
        ASSERT_EQ(got_lowp[i], bf16_to_float(float_to_bf16(got_p[i]))) << "bf16 copy " << i;
      } else {
        ASSERT_TRUE(got_lowp[i] != got_lowp[i]) << "bf16 copy written though null";
      }
    }
  }
}

TEST_F(CudaAdamW, UpdateMatchesFormula) {
  AdamWArgs a;
  a.lr = 6e-4f;
  a.weight_decay = 0.1f;
  a.grad_scale = 0.5f;
  a.step = 1;
  check_steps(1037, a, false);
  check_steps(1037, a, true);
  check_steps(1037, a, true, /*offset=*/1);
  a.weight_decay = 0.0f;
  a.grad_scale = 1.0f;
  a.step = 100;
  a.beta2 = 0.99f;
  check_steps(37 * 97, a, true);
}

TEST_F(CudaAdamW, SumSquares) {
  for (int64_t n : {int64_t{0}, int64_t{5}, int64_t{37 * 97}, int64_t{(1 << 20) + 37}}) {
    SCOPED_TRACE("n " + std::to_string(n));
    const auto x = random_normal(n, 51, 3.0f);
    double want = 0;
    for (float xi : x) want += double{xi} * xi;
    DeviceTensor d_x(x, DType::kF32);
    const double got = sum_squares(ctx(), d_x.ptr().f32(), n);
    EXPECT_NEAR(got, want, 1e-10 * want + 1e-300);
    EXPECT_EQ(sum_squares(ctx(), d_x.ptr().f32(), n), got) << "not deterministic";
  }
}

}  // namespace
}  // namespace nanogpt::cuda
