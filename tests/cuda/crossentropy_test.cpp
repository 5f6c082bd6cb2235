// cuda::crossentropy_forward_backward (crossentropy.cu) against the scalar reference: losses and
// dlogits (overwritten; float32 and bfloat16) over V of Vp columns (padding written 0), ignored
// rows (target -1: loss 0, dlogits 0), forward only (dlogits null), V below and far above the
// block size (GPT-2's V = 50257 of Vp = 50304). Skipped without a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/rng.h"
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

using CudaCrossEntropy = CudaTest;

// Targets in [0, V), every 5th row ignored (-1).
std::vector<int> random_targets(int64_t N, int V, uint64_t seed) {
  Rng rng(seed);
  std::vector<int> t(N);
  for (int64_t n = 0; n < N; ++n) t[n] = n % 5 == 3 ? -1 : static_cast<int>(rng.uniform_int(V));
  return t;
}

void check(int64_t N, int V, int Vp, DType dtype, bool with_dlogits) {
  SCOPED_TRACE("N " + std::to_string(N) + " V " + std::to_string(V) + " Vp " + std::to_string(Vp) +
               " " + dtype_name(dtype) + (with_dlogits ? "" : " forward only"));
  const float dloss = 1.0f / 37;
  const auto logits = random_normal(N * Vp, 21, 3.0f);
  const auto targets = random_targets(N, V, 22);
  std::vector<float> want_loss(N), want_d(N * Vp);
  ref::crossentropy_forward_backward(want_loss.data(), want_d.data(), logits.data(), targets.data(),
                                     dloss, N, V, Vp);

  DeviceTensor d_logits(logits, DType::kF32);
  DeviceTensor d_loss = DeviceTensor::nan(N, DType::kF32);
  DeviceTensor d_dlogits = DeviceTensor::nan(N * Vp, dtype);
  auto d_targets = testing_cuda::to_device(targets, "targets");
  crossentropy_forward_backward(d_loss.ptr().f32(), with_dlogits ? d_dlogits.ptr() : TypedPtr{},
                                d_logits.ptr().f32(), d_targets.data(), dloss, N, V, Vp);
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
  expect_close(got_d, want_d, 1e-9, dtype == DType::kF32 ? 1e-5 : 1e-2, "dlogits");
  for (int64_t n = 0; n < N; ++n) {
    for (int j = 0; j < Vp; ++j) {
      if (targets[n] < 0 || j >= V) {
        ASSERT_EQ(got_d[n * Vp + j], 0.0f) << "row " << n << " column " << j;
      }
    }
  }
}

// bfloat16 logits (the bf16 training forward's), the gradient overwriting them in place; the
// reference runs on the same rounded logits.
void check_bf16_in_place(int64_t N, int V, int Vp) {
  SCOPED_TRACE("bf16 in place: N " + std::to_string(N) + " V " + std::to_string(V) + " Vp " +
               std::to_string(Vp));
  const float dloss = 1.0f / 37;
  const auto logits = rounded(random_normal(N * Vp, 23, 3.0f), DType::kBF16);
  const auto targets = random_targets(N, V, 24);
  std::vector<float> want_loss(N), want_d(N * Vp);
  ref::crossentropy_forward_backward(want_loss.data(), want_d.data(), logits.data(), targets.data(),
                                     dloss, N, V, Vp);
  DeviceTensor d_z(logits, DType::kBF16);
  DeviceTensor d_loss = DeviceTensor::nan(N, DType::kF32);
  auto d_targets = testing_cuda::to_device(targets, "targets");
  crossentropy_forward_backward(d_loss.ptr().f32(), d_z.ptr(), d_z.ptr(), d_targets.data(), dloss,
                                N, V, Vp);
  expect_close(d_loss.download(), want_loss, 1e-5, 1e-5, "losses");
  const auto got_d = d_z.download();
  expect_close(got_d, want_d, 1e-9, 1e-2, "dlogits");
  for (int64_t n = 0; n < N; ++n) {
    for (int j = V; j < Vp; ++j) ASSERT_EQ(got_d[n * Vp + j], 0.0f) << "row " << n << " col " << j;
  }
  // Forward only (evaluation): the bf16 logits read, nothing written.
  DeviceTensor d_z2(logits, DType::kBF16);
  crossentropy_forward_backward(d_loss.ptr().f32(), TypedPtr{}, d_z2.ptr(), d_targets.data(), dloss,
                                N, V, Vp);
  expect_close(d_loss.download(), want_loss, 1e-5, 1e-5, "losses, forward only");
  EXPECT_EQ(d_z2.download(), logits);
}

TEST_F(CudaCrossEntropy, Bfloat16LogitsOverwrittenByTheirGradient) {
  check_bf16_in_place(37, 97, 128);
  check_bf16_in_place(37, 97, 99);
  check_bf16_in_place(6, 50257, 50304);
}

TEST_F(CudaCrossEntropy, SmallVocab) {
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    check(37, 97, 128, dtype, true);
    check(37, 1000, 1000, dtype, true);  // no padding
    check(37, 1000, 1024, dtype, true);
    check(37, 97, 99, dtype, true);  // rows of an odd width: the element loops
  }
  check(37, 1000, 1024, DType::kF32, false);
}

TEST_F(CudaCrossEntropy, Gpt2Vocab) {
  check(6, 50257, 50304, DType::kF32, true);
  check(6, 50257, 50304, DType::kBF16, true);
}

TEST_F(CudaCrossEntropy, ManyRows) {
  check(3000, 33, 64, DType::kF32, true);  // V below the block size: idle threads in the merge
}

}  // namespace
}  // namespace nanogpt::cuda
