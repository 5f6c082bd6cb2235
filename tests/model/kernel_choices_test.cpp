// KernelChoices (the `attention`, `fused`, `fused_mlp`, `activation_checkpointing` and `recompute`
// keys) change how the model computes, never what: attention=naive, fused=False and fused_mlp=True
// give the default path's loss and gradients (with dropout, so the naive path's recomputed masks
// are covered), and the naive path holds its (L, B, NH, T, T) probabilities in tracked memory;
// activation checkpointing gives the same gradients bit for bit and keeps one block's activations;
// recompute 0 and 1 give them bit for bit too, keeping what activation_layout says.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/check.h"
#include "core/memory.h"
#include "core/rng.h"
#include "fixture.h"
#include "kernels/cpu_backend.h"
#include "kernels/ops_lowp.h"
#include "model/gpt.h"

namespace nanogpt {
namespace {

using testing::max_abs;
using testing::max_abs_diff;

ModelConfig small_config() {
  ModelConfig c;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 32;
  c.block_size = 40;
  c.vocab_size = 67;
  c.bias = true;
  c.dropout = 0.1;
  return c;
}

struct Result {
  float loss;
  std::vector<float> grads;
};

Result run(const KernelChoices& choices, MemoryTracker* tracker = nullptr,
           DType dtype = DType::kF32, int n_layer = 2) {
  ModelConfig c = small_config();
  c.n_layer = n_layer;
  CpuBackend ctx;
  GPT model(c, tracker);
  model.init_weights(5);
  model.set_kernel_choices(choices);
  model.set_dtype(dtype);
  const int B = 3, T = 37;  // T not a multiple of any tile
  Rng rng(9);
  std::vector<int> x(B * T), y(B * T);
  for (int& t : x) t = static_cast<int>(rng.uniform_int(c.vocab_size));
  for (int& t : y) t = static_cast<int>(rng.uniform_int(c.vocab_size));
  y[4] = -1;
  model.zero_grad();
  const float loss = model.forward(ctx, x.data(), y.data(), B, T, true, 77, 0.5f);
  model.backward(ctx);
  return {loss, std::vector<float>(model.grads().begin(), model.grads().end())};
}

void expect_same(const Result& a, const Result& b) {
  // Different summation orders in float: loss to 1e-5 relative, gradients to 1e-4 of their max.
  EXPECT_NEAR(a.loss, b.loss, 1e-5 * b.loss);
  const int64_t n = static_cast<int64_t>(b.grads.size());
  EXPECT_LE(max_abs_diff(a.grads.data(), b.grads.data(), n), 1e-4 * max_abs(b.grads.data(), n));
}

TEST(KernelChoices, NaiveAttentionMatchesFlash) {
  const Result flash = run({});
  expect_same(run({.naive_attention = true, .fused = true}), flash);
}

TEST(KernelChoices, UnfusedMatchesFused) {
  const Result fused = run({});
  expect_same(run({.naive_attention = false, .fused = false}), fused);
  expect_same(run({.naive_attention = true, .fused = false}), fused);
}

// Block checkpointing recomputes each block's forward in the backward with the same code on the same
// input and the same dropout masks: the gradients are the same bit for bit, on every path (fused
// and unfused, flash and naive attention, float32 and bfloat16), with dropout on.
TEST(KernelChoices, ActivationCheckpointingGivesBitIdenticalGradients) {
  for (const bool fused : {true, false}) {
    for (const bool naive : {false, true}) {
      const Result kept = run({.naive_attention = naive, .fused = fused});
      const Result recomputed =
          run({.naive_attention = naive, .fused = fused, .checkpoint_blocks = true});
      EXPECT_EQ(recomputed.loss, kept.loss) << "fused " << fused << " naive " << naive;
      ASSERT_EQ(recomputed.grads.size(), kept.grads.size());
      EXPECT_EQ(max_abs_diff(recomputed.grads.data(), kept.grads.data(),
                             static_cast<int64_t>(kept.grads.size())),
                0.0f)
          << "fused " << fused << " naive " << naive;
    }
  }
  const Result kept16 = run({}, nullptr, DType::kBF16);
  const Result recomputed16 = run({.checkpoint_blocks = true}, nullptr, DType::kBF16);
  EXPECT_EQ(recomputed16.loss, kept16.loss);
  EXPECT_EQ(max_abs_diff(recomputed16.grads.data(), kept16.grads.data(),
                         static_cast<int64_t>(kept16.grads.size())),
            0.0f);
}

// It keeps one block's activations and each layer's residual stream: with 6 layers the arena
// shrinks by 5 blocks' worth less 5 residual streams, exactly as activation_layout says.
TEST(KernelChoices, ActivationCheckpointingKeepsOneBlock) {
  MemoryTracker kept_mem, recomputed_mem;
  run({}, &kept_mem, DType::kF32, 6);
  run({.checkpoint_blocks = true}, &recomputed_mem, DType::kF32, 6);
  ModelConfig c = small_config();
  c.n_layer = 6;
  const int64_t N = 3 * 37;
  const int64_t saved = activation_layout(c, N).total_bytes -
                        activation_layout(c, N, 0, DType::kF32, true).total_bytes;
  // per block: 10 C floats per row, of which residual3 (C) stays; plus 2 x 2 statistics and lse
  const int64_t C = c.n_embd;
  EXPECT_GE(saved, 5 * N * 9 * C * 4);
  EXPECT_EQ(kept_mem.peak_bytes() - recomputed_mem.peak_bytes(), saved);
}

// recompute 0 / 1 keep each block's LayerNorm outputs (and GELU output) instead of computing them
// again in the backward: the same floats, so the same loss and gradients bit for bit, on the fused
// and unfused paths, flash and naive attention, the fused MLP epilogue, float32 and bfloat16, with
// dropout on; the arena grows by 2 C (1) and 6 C (0) values a row a layer in the activation dtype.
TEST(KernelChoices, RecomputeLevelsGiveBitIdenticalGradients) {
  struct Path {
    KernelChoices choices;
    DType dtype;
  };
  const std::vector<Path> paths = {{{}, DType::kF32},
                                   {{.fused = false}, DType::kF32},
                                   {{.naive_attention = true}, DType::kF32},
                                   {{.fused_mlp = true}, DType::kF32},
                                   {{}, DType::kBF16},
                                   {{.fused = false}, DType::kBF16},
                                   {{.fused_mlp = true}, DType::kBF16}};
  for (const Path& path : paths) {
    const Result recomputed = run(path.choices, nullptr, path.dtype);
    for (int level : {0, 1}) {
      KernelChoices kept = path.choices;
      kept.recompute = level;
      const Result r = run(kept, nullptr, path.dtype);
      const std::string where = "recompute " + std::to_string(level) + " fused " +
                                std::to_string(kept.fused) + " naive " +
                                std::to_string(kept.naive_attention) + " fused_mlp " +
                                std::to_string(kept.fused_mlp) + " " + dtype_name(path.dtype);
      EXPECT_EQ(r.loss, recomputed.loss) << where;
      EXPECT_EQ(r.grads, recomputed.grads) << where;
    }
  }
  ModelConfig c = small_config();
  const int64_t N = 3 * 37, C = c.n_embd;
  for (const DType t : {DType::kF32, DType::kBF16}) {
    MemoryTracker two, one, zero;
    run({}, &two, t);
    run({.recompute = 1}, &one, t);
    run({.recompute = 0}, &zero, t);
    const int64_t base = activation_layout(c, N, 0, t).total_bytes;
    const int64_t more1 = activation_layout(c, N, 0, t, false, 1).total_bytes - base;
    const int64_t more0 = activation_layout(c, N, 0, t, false, 0).total_bytes - base;
    const int64_t bytes = static_cast<int64_t>(dtype_size(t));
    EXPECT_GE(more1, c.n_layer * N * 2 * C * bytes) << dtype_name(t);
    EXPECT_LT(more1, c.n_layer * (N * 2 * C * bytes + 2 * 64)) << dtype_name(t);
    EXPECT_GE(more0 - more1, c.n_layer * N * 4 * C * bytes) << dtype_name(t);
    EXPECT_LT(more0 - more1, c.n_layer * (N * 4 * C * bytes + 64)) << dtype_name(t);
    EXPECT_EQ(one.peak_bytes() - two.peak_bytes(), more1) << dtype_name(t);
    EXPECT_EQ(zero.peak_bytes() - two.peak_bytes(), more0) << dtype_name(t);
  }
}

TEST(KernelChoices, RecomputeOutsideItsLevelsOrWithCheckpointingIsRefusedNamingIt) {
  GPT model(small_config());
  auto refused = [&](const KernelChoices& k, const std::string& needle) {
    try {
      model.set_kernel_choices(k);
      ADD_FAILURE() << "expected an error mentioning " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  refused({.recompute = 3}, "recompute = 3: expected 0");
  refused({.recompute = -1}, "recompute = -1: expected 0");
  refused({.checkpoint_blocks = true, .recompute = 1}, "activation_checkpointing=False");
  EXPECT_NO_THROW(model.set_kernel_choices({.checkpoint_blocks = true, .recompute = 2}));
}

TEST(KernelChoices, FusedMlpEpilogueMatchesFused) {
  expect_same(run({.naive_attention = false, .fused = true, .fused_mlp = true}), run({}));
}

// At this size (float32, C and 4C multiples of 16) fused=True runs the MLP as one small_gemm region
// per op even with fused_mlp off; it computes the unfused path's floats, so fused=True and
// fused=False give the same loss and gradients bit for bit (the classifier is one chunk here and
// the fused residual + LayerNorm is bit-identical to the separate ops).
TEST(KernelChoices, SmallModelsFuseTheMlpWithTheSameFloats) {
  CpuBackend ctx;
  ASSERT_TRUE(cpu::mlp_fusion_one_region(ctx, DType::kF32, 3 * 37, 32, 4 * 32));
  const Result unfused = run({.naive_attention = false, .fused = false});
  const Result fused = run({});
  EXPECT_EQ(fused.loss, unfused.loss);
  ASSERT_EQ(fused.grads.size(), unfused.grads.size());
  EXPECT_EQ(max_abs_diff(fused.grads.data(), unfused.grads.data(),
                         static_cast<int64_t>(unfused.grads.size())),
            0.0f);
}

TEST(KernelChoices, NaiveAttentionHoldsTheProbabilities) {
  MemoryTracker flash_mem, naive_mem;
  run({}, &flash_mem);
  run({.naive_attention = true, .fused = true}, &naive_mem);
  const int64_t att_bytes = int64_t{2} * 3 * 2 * 37 * 37 * 4;  // L, B, NH, T, T floats
  EXPECT_GE(naive_mem.peak_bytes() - flash_mem.peak_bytes(), att_bytes);
}

}  // namespace
}  // namespace nanogpt
