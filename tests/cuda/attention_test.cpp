// cuda::attention_forward / attention_backward (the naive path on the tensor cores, att kept)
// against the scalar reference (ref::attention_*): out, the probabilities att (zero above the
// diagonal) and dqkv, without and with dropout (the same hash masks as the CPU), float32 with TF32
// and exact float32, and bfloat16 storage. Outputs are poisoned with NaN first; the reference's
// backward accumulates, so it starts from zeros. Skipped without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "kernels/cuda/cuda_context.h"
#include "kernels/cuda/device_memory.h"
#include "kernels/cuda/ops_cuda.h"
#include "kernels/ops.h"
#include "kernels/ops_lowp.h"

namespace nanogpt::cuda {
namespace {

using testing_cuda::DeviceTensor;
using testing_cuda::random_vector;
using testing_cuda::relative_error;
using testing_cuda::rounded;

// relative_error(got, want, base) < tol; with NANOGPT_TEST_VERBOSE set, prints the error (margins).
void expect_rel(const std::vector<float>& got, const std::vector<float>& want, double tol,
                const std::string& what, const std::vector<float>* base = nullptr) {
  const double err = relative_error(got, want, base);
  if (std::getenv("NANOGPT_TEST_VERBOSE"))
    std::printf("    %-40s err %.3g (tol %.3g)\n", what.c_str(), err, tol);
  EXPECT_LT(err, tol) << what;
}

// The causal softmax probabilities (B,NH,T,T) of qkv in double, zero above the diagonal.
std::vector<float> reference_probs(const std::vector<float>& qkv, int B, int T, int C, int NH) {
  const int HS = C / NH;
  const double scale = 1.0 / std::sqrt(static_cast<double>(HS));
  std::vector<float> att(static_cast<size_t>(B) * NH * T * T, 0.0f);
  std::vector<double> score(T);
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < NH; ++h) {
      for (int t = 0; t < T; ++t) {
        const float* q = &qkv[(static_cast<size_t>(b) * T + t) * 3 * C + h * HS];
        double m = -INFINITY;
        for (int s = 0; s <= t; ++s) {
          const float* k = &qkv[(static_cast<size_t>(b) * T + s) * 3 * C + C + h * HS];
          double dot = 0;
          for (int i = 0; i < HS; ++i) dot += static_cast<double>(q[i]) * k[i];
          score[s] = dot * scale;
          m = std::max(m, score[s]);
        }
        double sum = 0;
        for (int s = 0; s <= t; ++s) sum += std::exp(score[s] - m);
        float* row = &att[((static_cast<size_t>(b) * NH + h) * T + t) * T];
        for (int s = 0; s <= t; ++s) row[s] = static_cast<float>(std::exp(score[s] - m) / sum);
      }
    }
  }
  return att;
}

struct AttnCase {
  DType dtype;
  bool tf32;
  double tol;
};

const AttnCase kCases[] = {
    {DType::kF32, true, 3e-3},
    {DType::kF32, false, 1e-5},
    {DType::kBF16, false, 2e-2},
};

void check_attention(const AttnCase& c, int B, int T, int C, int NH, float p) {
  SCOPED_TRACE(std::string(dtype_name(c.dtype)) + (c.tf32 ? " tf32" : "") + " B " +
               std::to_string(B) + " T " + std::to_string(T) + " C " + std::to_string(C) + " NH " +
               std::to_string(NH) + " dropout " + std::to_string(p));
  const uint64_t seed = 1234;
  const int64_t btc = static_cast<int64_t>(B) * T * C;
  const int64_t tt = static_cast<int64_t>(B) * NH * T * T;
  CudaContext ctx(c.tf32);
  const auto qkv = rounded(random_vector(3 * btc, 31, 1.0f), c.dtype);
  const auto dout = rounded(random_vector(btc, 32, 1.0f), c.dtype);

  std::vector<float> want_out(btc), lse(static_cast<size_t>(B) * NH * T);
  std::vector<float> want_dqkv(3 * btc, 0.0f);  // the reference accumulates
  if (c.dtype == DType::kF32) {
    ref::attention_forward(want_out.data(), lse.data(), qkv.data(), B, T, C, NH, p, seed);
    ref::attention_backward(want_dqkv.data(), dout.data(), want_out.data(), lse.data(), qkv.data(),
                            B, T, C, NH, p, seed);
  } else {
    // 16-bit tensors: the reference of ops_lowp.h, whose dropout masks are drawn per group of
    // sequences (attention_batch_group), as the CPU's and the GPU's 16-bit attention draw them.
    const auto qkv16 = testing_cuda::to_bf16(qkv), dout16 = testing_cuda::to_bf16(dout);
    ref::attention_forward(TypedPtr(want_out.data()), lse.data(),
                           ConstTypedPtr(qkv16.data(), c.dtype), B, T, C, NH, p, seed);
    ref::attention_backward(TypedPtr(want_dqkv.data()), ConstTypedPtr(dout16.data(), c.dtype),
                            ConstTypedPtr(want_out.data()), lse.data(),
                            ConstTypedPtr(qkv16.data(), c.dtype), B, T, C, NH, p, seed);
  }
  const auto want_att = reference_probs(qkv, B, T, C, NH);

  DeviceTensor d_qkv(qkv, c.dtype), d_dout(dout, c.dtype);
  DeviceTensor d_out = DeviceTensor::nan(btc, c.dtype);
  DeviceTensor d_att = DeviceTensor::nan(tt, c.dtype);
  DeviceTensor d_dqkv = DeviceTensor::nan(3 * btc, c.dtype);
  attention_forward(ctx, d_out.ptr(), d_att.ptr(), d_qkv.ptr(), B, T, C, NH, p, seed);
  ctx.synchronize("attention_forward");
  const auto got_att = d_att.download();
  expect_rel(d_out.download(), want_out, c.tol, "out");
  expect_rel(got_att, want_att, c.tol, "att");
  int64_t nonzero_above = 0;
  for (int64_t r = 0; r < static_cast<int64_t>(B) * NH * T; ++r) {
    const int64_t t = r % T;
    for (int64_t s = t + 1; s < T; ++s) nonzero_above += !(got_att[r * T + s] == 0.0f);
  }
  EXPECT_EQ(nonzero_above, 0) << "att above the diagonal must be 0";

  attention_backward(ctx, d_dqkv.ptr(), d_dout.ptr(), d_att.ptr(), d_qkv.ptr(), B, T, C, NH, p,
                     seed);
  ctx.synchronize("attention_backward");
  const auto got_dqkv = d_dqkv.download();
  expect_rel(got_dqkv, want_dqkv, c.tol, "dqkv");
  // Each of dq, dk, dv on its own (a wrong one could hide in the norm of the others).
  for (int part = 0; part < 3; ++part) {
    std::vector<float> got_part, want_part;
    for (int64_t bt = 0; bt < static_cast<int64_t>(B) * T; ++bt) {
      for (int i = 0; i < C; ++i) {
        got_part.push_back(got_dqkv[bt * 3 * C + part * C + i]);
        want_part.push_back(want_dqkv[bt * 3 * C + part * C + i]);
      }
    }
    expect_rel(got_part, want_part, c.tol, std::string("d") + "qkv"[part]);
  }
}

TEST(CudaAttention, SmallOddT) {
  SKIP_WITHOUT_CUDA_DEVICE();
  for (const auto& c : kCases) {
    for (float p : {0.0f, 0.1f}) check_attention(c, 2, 67, 96, 3, p);
  }
}

TEST(CudaAttention, LongerRows) {
  SKIP_WITHOUT_CUDA_DEVICE();
  for (const auto& c : kCases) {
    for (float p : {0.0f, 0.1f}) check_attention(c, 1, 256, 128, 2, p);
  }
}

// The scratch bound covers forward and backward and grows with every size.
TEST(CudaAttention, ScratchBytes) {
  const size_t small = attention_scratch_bytes(1, 64, 64, 2, DType::kF32);
  EXPECT_GE(small, 6u * 64 * 64 * 4 + 2u * 64 * 64 * 4);
  EXPECT_GT(attention_scratch_bytes(2, 64, 64, 2, DType::kF32), small);
  EXPECT_GT(attention_scratch_bytes(1, 128, 64, 2, DType::kF32), small);
  EXPECT_LT(attention_scratch_bytes(1, 64, 64, 2, DType::kBF16), small);
}

}  // namespace
}  // namespace nanogpt::cuda
