// GPT with MasterWeights::kOutside (ZeRO-1 in mixed precision keeps each rank's shard of the
// float32 masters outside the model): set from the masters range by range -- cuts inside the
// float32-read wte and inside a matmul weight -- it computes bit for bit what the model with its
// own masters computes (loss and every gradient), in bfloat16 and float16, with and without
// biases. The float32-read tensors are exactly the ones not marked lowp_only, and the compact
// arena's counts partition like the arena. init_weights_range equals init_weights' slice.
#include <gtest/gtest.h>

#include <vector>

#include "core/rng.h"
#include "kernels/cpu_backend.h"
#include "model/gpt.h"
#include "model/init.h"
#include "random_tokens.h"

namespace nanogpt {
namespace {

using testing::random_tokens;

ModelConfig tiny(bool bias) {
  ModelConfig c;
  c.n_layer = 2, c.n_head = 2, c.n_embd = 32, c.block_size = 16, c.vocab_size = 67;
  c.bias = bias;
  c.dropout = 0.1;
  return c;
}

struct Case {
  DType dtype;
  bool bias;
};

class OutsideMasters : public ::testing::TestWithParam<Case> {};

TEST_P(OutsideMasters, ForwardAndBackwardEqualTheModelWithItsOwnMasters) {
  const Case c = GetParam();
  CpuBackend ctx;
  GPT own(tiny(c.bias));
  own.set_dtype(c.dtype);
  own.init_weights(7);
  GPT outside(tiny(c.bias), nullptr, MasterWeights::kOutside);
  outside.set_dtype(c.dtype);
  const ParamTable& table = own.table();
  const int64_t n = table.total_numel();
  // Three ranges: one ending inside wte (read in float32 by the encoder), one ending inside the
  // first block's qkv weight (16-bit only), the rest.
  const int64_t cut1 = table.at("wte.weight").numel / 2 / 16 * 16 + 16;
  const ParamSpec& qkv = table.at("h.0.attn.c_attn.weight");
  const int64_t cut2 = qkv.offset + qkv.numel / 2 / 16 * 16;
  const std::vector<float> masters(own.params().begin(), own.params().end());
  for (auto [b, e] : {std::pair{cut1, cut2}, std::pair{int64_t{0}, cut1}, std::pair{cut2, n}}) {
    outside.set_weights_range(ctx, masters.data() + b, b, e);
  }
  const int B = 3, T = 16;
  for (int step = 0; step < 2; ++step) {
    const auto x = random_tokens(B * T, 67, 1 + step), y = random_tokens(B * T, 67, 11 + step);
    const float l_own = own.forward(ctx, x.data(), y.data(), B, T, true, 99 + step, 0.5f);
    const float l_out = outside.forward(ctx, x.data(), y.data(), B, T, true, 99 + step, 0.5f);
    EXPECT_EQ(l_own, l_out) << "step " << step;
    own.backward(ctx);
    outside.backward(ctx);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(own.grads()[i], outside.grads()[i]) << "step " << step << ", element " << i;
    }
    // Evaluation (no dropout, no targets: full logits) too.
    own.forward(ctx, x.data(), nullptr, B, T, false);
    outside.forward(ctx, x.data(), nullptr, B, T, false);
    const int64_t logits = int64_t{B} * T * tiny(c.bias).padded_vocab_size();
    for (int64_t i = 0; i < logits; ++i) ASSERT_EQ(own.logits()[i], outside.logits()[i]) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Types, OutsideMasters,
                         ::testing::Values(Case{DType::kBF16, false}, Case{DType::kBF16, true},
                                           Case{DType::kF16, true}),
                         [](const auto& info) {
                           return std::string(info.param.dtype == DType::kBF16 ? "bf16" : "fp16") +
                                  (info.param.bias ? "_bias" : "_nobias");
                         });

TEST(OutsideMasters, WhatNeedsTheMastersFailsWithANamedError) {
  GPT outside(tiny(true), nullptr, MasterWeights::kOutside);
  EXPECT_THROW(outside.set_dtype(DType::kF32), Error);
  CpuBackend ctx;
  std::vector<float> m(16);
  // Before set_dtype there is no 16-bit copy to set.
  EXPECT_THROW(outside.set_weights_range(ctx, m.data(), 0, 16), Error);
  outside.set_dtype(DType::kBF16);
  try {
    outside.params();
    FAIL() << "params() must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ZeRO-1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(outside.init_weights(1), Error);
  EXPECT_THROW(outside.set_weights_range(ctx, m.data(), -16, 0), Error);
  GPT own(tiny(true));
  own.set_dtype(DType::kBF16);
  EXPECT_THROW(own.set_weights_range(ctx, m.data(), 0, 16), Error);
}

TEST(OutsideMasters, Float32ReadTensorsAndTheirCompactArena) {
  const ParamTable table(tiny(true));
  int64_t compact = 0;
  for (const ParamSpec& s : table.specs()) {
    const bool matmul_weight = s.name.find(".weight") != std::string::npos && s.shape.size() == 2 &&
                               s.name.rfind("h.", 0) == 0;
    EXPECT_EQ(s.lowp_only, matmul_weight) << s.name;
    if (s.lowp_only) {
      EXPECT_EQ(s.fp32_read_offset, -1) << s.name;
    } else {
      EXPECT_EQ(s.fp32_read_offset, compact) << s.name;
      compact += (s.numel + 15) / 16 * 16;
    }
  }
  EXPECT_EQ(table.fp32_read_numel(), compact);
  // Any partition of the arena partitions the compact arena, in order.
  const int64_t n = table.total_numel();
  const int64_t cuts[] = {0, 48, n / 3, n / 2 + 16, n};
  int64_t sum = 0;
  for (int k = 0; k + 1 < 5; ++k) {
    EXPECT_EQ(table.fp32_read_count(0, cuts[k]), sum);
    sum += table.fp32_read_count(cuts[k], cuts[k + 1]);
  }
  EXPECT_EQ(sum, compact);
}

TEST(OutsideMasters, InitWeightsRangeEqualsTheWholeInitsSlice) {
  const ParamTable table(tiny(true));
  const int64_t n = table.total_numel();
  std::vector<float> whole(static_cast<size_t>(n));
  init_weights(table, whole.data(), 42);
  // Odd bounds: Box-Muller pairs cut in half, tensors cut anywhere.
  for (auto [b, e] :
       {std::pair<int64_t, int64_t>{0, n}, {1, 77}, {33, n / 2 + 1}, {n / 2 + 1, n}, {n - 3, n}}) {
    std::vector<float> part(static_cast<size_t>(e - b), -1.0f);
    init_weights_range(table, 42, b, e, part.data());
    for (int64_t i = b; i < e; ++i)
      ASSERT_EQ(part[i - b], whole[i]) << "[" << b << ", " << e << ")";
  }
}

}  // namespace
}  // namespace nanogpt
