// KernelChoices (the `attention` and `fused` keys) change how the model computes, never what:
// attention=naive and fused=False give the default path's loss and gradients (with dropout, so the
// naive path's recomputed masks are covered), and the naive path holds its (L, B, NH, T, T)
// probabilities in tracked memory.
#include <gtest/gtest.h>

#include <vector>

#include "core/memory.h"
#include "core/rng.h"
#include "fixture.h"
#include "kernels/context.h"
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

Result run(const KernelChoices& choices, MemoryTracker* tracker = nullptr) {
  const ModelConfig c = small_config();
  KernelContext ctx;
  GPT model(c, tracker);
  model.init_weights(5);
  model.set_kernel_choices(choices);
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

TEST(KernelChoices, NaiveAttentionHoldsTheProbabilities) {
  MemoryTracker flash_mem, naive_mem;
  run({}, &flash_mem);
  run({.naive_attention = true, .fused = true}, &naive_mem);
  const int64_t att_bytes = int64_t{2} * 3 * 2 * 37 * 37 * 4;  // L, B, NH, T, T floats
  EXPECT_GE(naive_mem.peak_bytes() - flash_mem.peak_bytes(), att_bytes);
}

}  // namespace
}  // namespace nanogpt
