// The CUDA ops of the architecture options beyond GPT-2 (arch.cu) against the scalar reference
// (kernels/ref/arch.cpp), in float32 and bfloat16 storage: QK-norm forward / backward and rotary
// embeddings forward / backward in place on qkv's Q and K (V left bit-identical), the logit
// soft-cap, and the soft-capped cross-entropy (losses and dlogits over V of Vp columns, ignored
// rows, forward only; V small and GPT-2's). bfloat16 tensors go through the ref as bfloat16 host
// arrays, so both sides round the same inputs once. Skipped without a GPU.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "kernels/cuda/ops_cuda.h"
#include "kernels/ops_arch.h"

namespace nanogpt::cuda {
namespace {

using testing_cuda::CudaTest;
using testing_cuda::DeviceTensor;
using testing_cuda::expect_close;
using testing_cuda::random_vector;
using testing_cuda::relative_error;

using CudaArchQkNorm = CudaTest;
using CudaArchRotary = CudaTest;
using CudaArchSoftcap = CudaTest;

// In-place ops: the largest error relative to the largest expected value.
double tolerance(DType dtype) { return dtype == DType::kF32 ? 1e-5 : 2e-2; }

// A host tensor of `dtype` for the ref ops: float32 values, or bfloat16 bit patterns.
struct HostTensor {
  DType dtype;
  std::vector<float> f;
  std::vector<uint16_t> h;
  HostTensor(const std::vector<float>& v, DType d) : dtype(d), f(v) {
    if (d == DType::kBF16) h = testing_cuda::to_bf16(v);
  }
  TypedPtr ptr() { return dtype == DType::kF32 ? TypedPtr(f.data()) : TypedPtr(h.data(), dtype); }
  std::vector<float> values() const {
    return dtype == DType::kF32 ? f : testing_cuda::from_bf16(h);
  }
};

std::string describe(int64_t N, int C, int NH, DType dtype) {
  return "N " + std::to_string(N) + " C " + std::to_string(C) + " NH " + std::to_string(NH) + " " +
         dtype_name(dtype);
}

// V's columns (2C .. 3C-1 of each row) of got are those of `input`, bit for bit.
void expect_v_untouched(const std::vector<float>& got, const std::vector<float>& input, int64_t N,
                        int C) {
  ASSERT_EQ(got.size(), input.size());
  int64_t changed = 0;
  for (int64_t n = 0; n < N; ++n) {
    for (int c = 2 * C; c < 3 * C; ++c) {
      const int64_t i = n * 3 * C + c;
      if (!(got[i] == input[i])) ++changed;
    }
  }
  EXPECT_EQ(changed, 0) << "elements of V changed";
}

// ---- QK-norm ----

void check_qk_rmsnorm_forward(int64_t N, int C, int NH, DType dtype) {
  SCOPED_TRACE("qk_rmsnorm_forward " + describe(N, C, NH, dtype));
  const auto input = testing_cuda::rounded(random_vector(N * 3 * C, 31, 2.0f), dtype);
  HostTensor want(input, dtype);
  std::vector<float> want_rstd(static_cast<size_t>(N * 2 * NH));
  ref::qk_rmsnorm_forward(want.ptr(), want_rstd.data(), N, C, NH);

  DeviceTensor qkv(input, dtype);
  DeviceTensor rstd = DeviceTensor::nan(N * 2 * NH, DType::kF32);
  qk_rmsnorm_forward(qkv.ptr(), rstd.ptr().f32(), N, C, NH);
  const auto got = qkv.download();
  EXPECT_LT(relative_error(got, want.values()), tolerance(dtype));
  expect_v_untouched(got, input, N, C);
  expect_close(rstd.download(), want_rstd, 1e-6, 1e-5, "rstd");
}

void check_qk_rmsnorm_backward(int64_t N, int C, int NH, DType dtype) {
  SCOPED_TRACE("qk_rmsnorm_backward " + describe(N, C, NH, dtype));
  // y and rstd as the forward leaves them; g a random gradient with respect to y.
  HostTensor y(testing_cuda::rounded(random_vector(N * 3 * C, 41, 2.0f), dtype), dtype);
  std::vector<float> rstd(static_cast<size_t>(N * 2 * NH));
  ref::qk_rmsnorm_forward(y.ptr(), rstd.data(), N, C, NH);
  const auto y_values = y.values();
  const auto grad = testing_cuda::rounded(random_vector(N * 3 * C, 42), dtype);
  HostTensor want(grad, dtype);
  ref::qk_rmsnorm_backward(want.ptr(), ConstTypedPtr(y.ptr()), rstd.data(), N, C, NH);

  DeviceTensor d_y(y_values, dtype);
  DeviceTensor d_rstd(rstd, DType::kF32);
  DeviceTensor dqkv(grad, dtype);
  qk_rmsnorm_backward(dqkv.ptr(), d_y.ptr(), d_rstd.ptr().f32(), N, C, NH);
  const auto got = dqkv.download();
  EXPECT_LT(relative_error(got, want.values()), tolerance(dtype));
  expect_v_untouched(got, grad, N, C);
  EXPECT_EQ(d_y.download(), y_values) << "qkv changed";
}

TEST_F(CudaArchQkNorm, Forward) {
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    check_qk_rmsnorm_forward(37, 96, 3, dtype);   // HS 32: one element per lane
    check_qk_rmsnorm_forward(37, 256, 2, dtype);  // HS 128: four per lane
    check_qk_rmsnorm_forward(5, 60, 3, dtype);    // HS 20: idle lanes
  }
}

TEST_F(CudaArchQkNorm, Backward) {
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    check_qk_rmsnorm_backward(37, 96, 3, dtype);
    check_qk_rmsnorm_backward(37, 256, 2, dtype);
    check_qk_rmsnorm_backward(5, 60, 3, dtype);
  }
}

// ---- rotary embeddings ----

// The tables (max_T, HS/2) as model/architecture.h's RotaryTables makes them: angle
// p * theta^(-2i/HS), cosine and sine in double, rounded.
void rotary_tables(int max_T, int HS, double theta, std::vector<float>& cos,
                   std::vector<float>& sin) {
  const int half = HS / 2;
  cos.assign(static_cast<size_t>(max_T) * half, 0.0f);
  sin.assign(static_cast<size_t>(max_T) * half, 0.0f);
  for (int p = 0; p < max_T; ++p) {
    for (int i = 0; i < half; ++i) {
      const double angle = p * std::pow(theta, -2.0 * i / HS);
      cos[static_cast<size_t>(p) * half + i] = static_cast<float>(std::cos(angle));
      sin[static_cast<size_t>(p) * half + i] = static_cast<float>(std::sin(angle));
    }
  }
}

void check_rotary(int64_t N, int T, int pos0, int C, int NH, DType dtype, bool backward) {
  SCOPED_TRACE(std::string(backward ? "rotary_backward " : "rotary_forward ") +
               describe(N, C, NH, dtype) + " T " + std::to_string(T) + " pos0 " +
               std::to_string(pos0));
  const int HS = C / NH, max_T = pos0 + T + 3;
  std::vector<float> cos, sin;
  rotary_tables(max_T, HS, 10000.0, cos, sin);
  const auto input = testing_cuda::rounded(random_vector(N * 3 * C, backward ? 52 : 51), dtype);
  HostTensor want(input, dtype);
  if (backward) {
    ref::rotary_backward(want.ptr(), cos.data(), sin.data(), N, T, pos0, C, NH);
  } else {
    ref::rotary_forward(want.ptr(), cos.data(), sin.data(), N, T, pos0, C, NH);
  }

  DeviceTensor d_cos(cos, DType::kF32), d_sin(sin, DType::kF32);
  DeviceTensor qkv(input, dtype);
  if (backward) {
    rotary_backward(qkv.ptr(), d_cos.ptr().f32(), d_sin.ptr().f32(), N, T, pos0, C, NH);
  } else {
    rotary_forward(qkv.ptr(), d_cos.ptr().f32(), d_sin.ptr().f32(), N, T, pos0, C, NH);
  }
  const auto got = qkv.download();
  EXPECT_LT(relative_error(got, want.values()), tolerance(dtype));
  expect_v_untouched(got, input, N, C);
}

TEST_F(CudaArchRotary, ForwardAndBackward) {
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    for (bool backward : {false, true}) {
      check_rotary(64, 16, 5, 128, 2, dtype, backward);  // 4 sequences of T 16, HS 64
      check_rotary(37, 37, 0, 96, 3, dtype, backward);   // HS 32, one partial sequence
      check_rotary(30, 7, 2, 60, 3, dtype, backward);    // HS 20: 10 pairs per head
    }
  }
}

// ---- logit soft-cap ----

TEST_F(CudaArchSoftcap, Forward) {
  for (float cap : {15.0f, 30.0f}) {
    SCOPED_TRACE("cap " + std::to_string(cap));
    const int64_t n = 4099;
    const auto z = random_vector(n, 61, 20.0f);
    std::vector<float> want = z;
    ref::softcap_forward(want.data(), n, cap);
    DeviceTensor d_z(z, DType::kF32);
    softcap_forward(d_z.ptr().f32(), n, cap);
    expect_close(d_z.download(), want, 1e-6, 1e-5, "capped");
  }
}

// Targets in [0, V), every 5th row (from row 3) ignored (-1).
std::vector<int> random_targets(int64_t N, int V, uint64_t seed) {
  Rng rng(seed);
  std::vector<int> t(static_cast<size_t>(N));
  for (int64_t n = 0; n < N; ++n) t[n] = n % 5 == 3 ? -1 : static_cast<int>(rng.uniform_int(V));
  return t;
}

void check_crossentropy_softcap(int64_t N, int V, int Vp, float cap, DType dtype,
                                bool with_dlogits) {
  SCOPED_TRACE("crossentropy_softcap N " + std::to_string(N) + " V " + std::to_string(V) + " Vp " +
               std::to_string(Vp) + " cap " + std::to_string(cap) + " " + dtype_name(dtype) +
               (with_dlogits ? "" : " forward only"));
  const float dloss = 1.0f / 37;
  const auto logits = random_vector(N * Vp, 71, 4.0f);
  const auto targets = random_targets(N, V, 72);
  std::vector<float> want_loss(static_cast<size_t>(N)), want_d(static_cast<size_t>(N * Vp));
  ref::crossentropy_softcap_forward_backward(want_loss.data(), want_d.data(), logits.data(),
                                             targets.data(), dloss, N, V, Vp, cap);

  DeviceTensor d_logits(logits, DType::kF32);
  DeviceTensor d_loss = DeviceTensor::nan(N, DType::kF32);
  DeviceTensor d_dlogits = DeviceTensor::nan(N * Vp, dtype);
  auto d_targets = testing_cuda::to_device(targets, "targets");
  crossentropy_softcap_forward_backward(
      d_loss.ptr().f32(), with_dlogits ? d_dlogits.ptr() : TypedPtr{}, d_logits.ptr().f32(),
      d_targets.data(), dloss, N, V, Vp, cap);
  const auto got_loss = d_loss.download();
  expect_close(got_loss, want_loss, 1e-5, 1e-5, "losses");
  for (int64_t n = 0; n < N; ++n) {
    if (targets[n] < 0) {
      EXPECT_EQ(got_loss[n], 0.0f) << "ignored row " << n;
    }
  }
  const auto got_d = d_dlogits.download();
  if (!with_dlogits) {
    for (float x : got_d) ASSERT_TRUE(x != x) << "dlogits written though null";
    return;
  }
  expect_close(got_d, want_d, 1e-9, dtype == DType::kF32 ? 2e-5 : 1e-2, "dlogits");
  for (int64_t n = 0; n < N; ++n) {
    for (int j = 0; j < Vp; ++j) {
      if (targets[n] < 0 || j >= V) {
        ASSERT_EQ(got_d[n * Vp + j], 0.0f) << "row " << n << " column " << j;
      }
    }
  }
}

TEST_F(CudaArchSoftcap, CrossEntropySmallVocab) {
  for (float cap : {15.0f, 30.0f}) {
    for (DType dtype : {DType::kF32, DType::kBF16}) {
      check_crossentropy_softcap(37, 67, 128, cap, dtype, true);
    }
  }
  check_crossentropy_softcap(37, 67, 128, 15.0f, DType::kF32, false);
}

TEST_F(CudaArchSoftcap, CrossEntropyGpt2Vocab) {
  for (float cap : {15.0f, 30.0f}) {
    for (DType dtype : {DType::kF32, DType::kBF16}) {
      check_crossentropy_softcap(5, 50257, 50304, cap, dtype, true);  // row 3 ignored
    }
  }
}

}  // namespace
}  // namespace nanogpt::cuda
