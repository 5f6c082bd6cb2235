// The oneDNN attention (kernels/cpu/attention_onednn: block products as oneDNN matmuls) against
// the float32 reference on the same bf16 inputs, forward and accumulating backward, with and
// without dropout, at the shapes of the native kernel's tests (the same error model:
// attention_bf16_tolerance.h); the same bits at every thread count and with its scratch reused or
// NaN-poisoned; the 16-bit attention op takes it where the context's way is onednn; and it runs
// inside a whole training step of the model (tests/e2e: MixedPrecisionCli). Skipped where the CPU
// (or its NANOGPT_CPU_TARGET cap) has no bf16 dot products: oneDNN would emulate bf16 there, and
// the planner never offers the way.
#include "kernels/cpu/attention_onednn.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <limits>
#include <tuple>
#include <vector>

#include "attention_bf16_tolerance.h"
#include "core/cpu_info.h"
#include "core/rng.h"
#include "kernel_test_util.h"
#include "kernels/cpu_backend.h"
#include "kernels/cpu/context_impl.h"
#include "kernels/kernel_ways.h"
#include "kernels/ops.h"
#include "kernels/ops_lowp.h"

namespace nanogpt {
namespace {

using testing::bf16_tolerance;
using testing::expect_within;
using testing::random_normal;
using testing::ScopedOmpThreads;
using testing::to_bf16;
using testing::to_float;

#define SKIP_WITHOUT_BF16_DOT_PRODUCTS()                                                   \
  if (!have_bf16_dot_products())                                                           \
  GTEST_SKIP() << "this CPU (or its NANOGPT_CPU_TARGET cap) has no bf16 dot products: no " \
                  "native oneDNN bf16 matmul"

class AttentionOnednnTest : public ::testing::TestWithParam<std::tuple<int, int, int, int, float>> {
};

TEST_P(AttentionOnednnTest, MatchesFloat32ReferenceWithinBf16Rounding) {
  SKIP_WITHOUT_BF16_DOT_PRODUCTS();
  const auto [B, T, C, NH, p] = GetParam();
  CpuBackend ctx;
  testing::expect_bf16_attention_within_error_model(
      [&](uint16_t* out, float* lse, const uint16_t* qkv, uint64_t seed) {
        cpu::attention_forward_onednn(ctx, out, lse, qkv, B, T, C, NH, p, seed);
      },
      [&](uint16_t* dqkv, const uint16_t* dout, const uint16_t* out, const float* lse,
          const uint16_t* qkv, uint64_t seed) {
        cpu::attention_backward_onednn(ctx, dqkv, dout, out, lse, qkv, B, T, C, NH, p, seed);
      },
      B, T, C, NH, p);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, AttentionOnednnTest,
    ::testing::Values(std::make_tuple(2, 37, 48, 3, 0.0f),    // HS 16, T odd
                      std::make_tuple(2, 37, 48, 3, 0.2f),    // with dropout
                      std::make_tuple(1, 1, 32, 2, 0.0f),     // T = 1
                      std::make_tuple(1, 130, 128, 2, 0.1f),  // HS 64, 3 query blocks, odd tail
                      std::make_tuple(3, 64, 64, 2, 0.0f),    // HS 32, T exactly one block
                      std::make_tuple(1, 200, 256, 4, 0.0f),
                      std::make_tuple(1, 70, 120, 2, 0.1f)));  // HS 60: no multiple of 16

// Heads are the threads' tasks and each is computed alone: the same bits at any thread count, and
// with the context's scratch left over from other shapes or NaN-poisoned.
TEST(AttentionOnednn, SameBitsAtEveryThreadCountAndWithReusedScratch) {
  SKIP_WITHOUT_BF16_DOT_PRODUCTS();
  const int B = 3, T = 97, C = 128, NH = 2;
  const auto qkv16 = to_bf16(random_normal(size_t(B) * T * 3 * C, 4));
  const auto dout16 = to_bf16(random_normal(size_t(B) * T * C, 5));
  std::vector<uint16_t> out1, dqkv1;
  const ScopedOmpThreads omp_threads;
  CpuBackend shared;
  for (int threads : {1, 2, 3, 4}) {
    omp_threads.set(threads);
    for (int pass = 0; pass < 2; ++pass) {  // fresh context, then the shared one poisoned
      CpuBackend fresh;
      CpuBackend& ctx = pass == 0 ? fresh : shared;
      if (pass == 1) {
        // Leftovers of another shape first, then NaN everywhere.
        std::vector<uint16_t> o(size_t(2) * 200 * 256), q = to_bf16(random_normal(o.size() * 3, 6));
        std::vector<float> l(size_t(2) * 4 * 200);
        cpu::attention_forward_onednn(ctx, o.data(), l.data(), q.data(), 2, 200, 256, 4, 0.0f, 1);
        ctx.impl().attention.fill(std::numeric_limits<float>::quiet_NaN());
      }
      std::vector<uint16_t> out16(size_t(B) * T * C), dqkv16(qkv16.size(), 0);
      std::vector<float> lse(size_t(B) * NH * T);
      cpu::attention_forward_onednn(ctx, out16.data(), lse.data(), qkv16.data(), B, T, C, NH, 0.1f,
                                    7);
      cpu::attention_backward_onednn(ctx, dqkv16.data(), dout16.data(), out16.data(), lse.data(),
                                     qkv16.data(), B, T, C, NH, 0.1f, 7);
      if (out1.empty()) {
        out1 = out16, dqkv1 = dqkv16;
      } else {
        EXPECT_EQ(out16, out1) << threads << " threads, pass " << pass;
        EXPECT_EQ(dqkv16, dqkv1) << threads << " threads, pass " << pass;
      }
    }
  }
}

// The 16-bit attention op takes the oneDNN kernel where the context's way is onednn: its bits
// equal direct calls on each batch group with the group's seed.
TEST(AttentionOnednn, LowpOpTakesItWhereTheWayIsOnednn) {
  SKIP_WITHOUT_BF16_DOT_PRODUCTS();
  const int B = 2, T = 50, C = 256, NH = 4;  // one batch group (attention_batch_group)
  ASSERT_EQ(attention_batch_group(B, NH), B);
  CpuBackend ctx;
  ctx.set_ways({.attention_bf16 = AttentionBf16Way::kOnednn});
  const auto qkv16 = to_bf16(random_normal(size_t(B) * T * 3 * C, 6));
  const auto dout16 = to_bf16(random_normal(size_t(B) * T * C, 7));
  std::vector<uint16_t> out_op(size_t(B) * T * C), out_direct(out_op.size());
  std::vector<uint16_t> dq_op(qkv16.size(), 0), dq_direct(qkv16.size(), 0);
  std::vector<float> lse_op(size_t(B) * NH * T), lse_direct(lse_op.size());
  cpu::attention_forward(ctx, TypedPtr(out_op.data(), DType::kBF16), lse_op.data(),
                         ConstTypedPtr(qkv16.data(), DType::kBF16), B, T, C, NH, 0.1f, 3);
  cpu::attention_backward(ctx, TypedPtr(dq_op.data(), DType::kBF16),
                          ConstTypedPtr(dout16.data(), DType::kBF16),
                          ConstTypedPtr(out_op.data(), DType::kBF16), lse_op.data(),
                          ConstTypedPtr(qkv16.data(), DType::kBF16), B, T, C, NH, 0.1f, 3);
  CpuBackend direct;
  cpu::attention_forward_onednn(direct, out_direct.data(), lse_direct.data(), qkv16.data(), B, T, C,
                                NH, 0.1f, splitmix64(3));
  cpu::attention_backward_onednn(direct, dq_direct.data(), dout16.data(), out_direct.data(),
                                 lse_direct.data(), qkv16.data(), B, T, C, NH, 0.1f, splitmix64(3));
  EXPECT_EQ(out_op, out_direct);
  EXPECT_EQ(lse_op, lse_direct);
  EXPECT_EQ(dq_op, dq_direct);
}

}  // namespace
}  // namespace nanogpt
