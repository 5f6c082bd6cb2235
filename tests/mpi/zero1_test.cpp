// ZeRO-1's building blocks in one process: AdamW over the slices of a ParamTable, one per shard,
// updates exactly like one AdamW over the whole table (weight decay follows each tensor across the
// cut), and Zero1 on a world of one takes the same steps as the plain optimizer with clipping. With
// sharded master weights (bfloat16) it trains a model built with MasterWeights::kOutside exactly
// like the plain optimizer trains a model holding its own masters.
#include "distributed/zero1.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/rng.h"
#include "distributed/single_process_communicator.h"
#include "kernels/cpu_backend.h"
#include "model/gpt.h"
#include "optim/grad_clip.h"
#include "optim/optimizer.h"

namespace nanogpt {
namespace {

ModelConfig tiny() {
  ModelConfig c;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 32;
  c.block_size = 16;
  c.vocab_size = 67;
  return c;
}

std::vector<float> random_values(int64_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = rng.uniform() - 0.5f;
  return v;
}

TEST(ParamTableSlice, ShardOptimizersEqualTheWholeOne) {
  const ParamTable table(tiny());
  const int64_t N = table.total_numel();
  OptimConfig oc;
  oc.weight_decay = 0.1;
  std::vector<float> whole_p = random_values(N, 1), shard_p = whole_p;
  auto whole = make_optimizer(oc, table);
  // Cuts in the middle of tensors, not at 16-element boundaries.
  const int64_t cuts[] = {0, N / 3 + 5, 2 * N / 3 + 7, N};
  std::vector<std::unique_ptr<Optimizer>> shards;
  for (int s = 0; s < 3; ++s) {
    const ParamTable part = table.slice(cuts[s], cuts[s + 1]);
    EXPECT_EQ(part.total_numel(), cuts[s + 1] - cuts[s]);
    shards.push_back(make_optimizer(oc, part));
  }
  for (int step = 0; step < 3; ++step) {
    const std::vector<float> g = random_values(N, 10 + step);
    whole->step(whole_p.data(), g.data(), 1e-2);
    for (int s = 0; s < 3; ++s) shards[s]->step(shard_p.data() + cuts[s], g.data() + cuts[s], 1e-2);
  }
  EXPECT_EQ(shard_p, whole_p);
  EXPECT_THROW(table.slice(5, N + 1), Error);
}

TEST(Zero1, WorldOfOneStepsLikeThePlainOptimizerWithClipping) {
  CpuBackend backend;  // the host: the optimizer ops run here
  const ParamTable table(tiny());
  const int64_t N = table.total_numel();
  OptimConfig oc;
  SingleProcessCommunicator comm;
  Zero1 zero(comm, oc, table, nullptr);
  EXPECT_EQ(zero.shard_begin(), 0);
  EXPECT_EQ(zero.shard_end(), N);
  auto plain = make_optimizer(oc, table);
  std::vector<float> p0 = random_values(N, 1), p1 = p0;
  for (int step = 0; step < 3; ++step) {
    std::vector<float> g = random_values(N, 20 + step);
    for (float& x : g) x *= 10;  // norm well above the clip
    double waited = 0;
    const double norm = zero.reduce_gradients(g.data(), &waited);
    zero.step(p0.data(), 1e-2, norm, 1.0, &waited);
    const double plain_norm = clip_grad_norm(backend, table, g.data(), 1.0);
    EXPECT_NEAR(norm, plain_norm, 1e-9 * plain_norm);
    plain->step(p1.data(), g.data(), 1e-2);
  }
  for (int64_t i = 0; i < N; ++i) ASSERT_NEAR(p0[i], p1[i], 1e-6f) << "element " << i;
  // The whole state comes back out for the checkpoint.
  std::vector<std::pair<std::string, Buffer<float>>> state;
  zero.gather_state(&state);
  ASSERT_EQ(state.size(), 2u);
  EXPECT_EQ(state[0].first, "m");
  const auto plain_state = plain->state_tensors();
  for (int64_t i = 0; i < N; ++i) ASSERT_NEAR(state[1].second[i], plain_state[1].data[i], 1e-6f);
}

TEST(Zero1, ShardedMastersTrainLikeTheModelsOwnMasters) {
  ModelConfig mc = tiny();
  mc.bias = true;
  CpuBackend ctx;
  GPT own(mc);
  own.set_dtype(DType::kBF16);
  own.init_weights(5);
  GPT outside(mc, nullptr, MasterWeights::kOutside);
  outside.set_dtype(DType::kBF16);
  const ParamTable& table = own.table();
  OptimConfig oc;
  oc.weight_decay = 0.1;
  SingleProcessCommunicator comm;
  MemoryTracker tracker;
  Zero1 zero(comm, oc, table, &tracker, /*shard_masters=*/true);
  ASSERT_TRUE(zero.shards_masters());
  // The optimizer state, the reduced-gradient shard and the masters: 4 arenas on a world of one.
  EXPECT_EQ(tracker.current_bytes(),
            4 * static_cast<int64_t>((table.total_numel() * 4 + 63) / 64 * 64));
  zero.init_masters(table, 5);
  zero.publish_weights(outside, ctx);
  auto plain = make_optimizer(oc, table);
  const int B = 2, T = 16;
  for (int step = 0; step < 3; ++step) {
    Rng rng(100 + step);
    std::vector<int> x(B * T), y(B * T);
    for (int& t : x) t = static_cast<int>(rng.uniform_int(67));
    for (int& t : y) t = static_cast<int>(rng.uniform_int(67));
    const float l_own = own.forward(ctx, x.data(), y.data(), B, T, true, 7);
    const float l_out = outside.forward(ctx, x.data(), y.data(), B, T, true, 7);
    ASSERT_EQ(l_own, l_out) << "step " << step;
    own.backward(ctx);
    outside.backward(ctx);
    double waited = 0;
    const double norm = zero.reduce_gradients(outside.grads().data(), &waited);
    EXPECT_GT(norm, 0.0);
    zero.step(outside, ctx, 1e-2, norm, /*max_norm=*/0.0, &waited);
    plain->step(own.params().data(), own.grads().data(), 1e-2);
    own.zero_grad();
    outside.zero_grad();
  }
  Buffer<float> masters;
  zero.gather_masters(&masters);
  ASSERT_EQ(masters.size(), static_cast<size_t>(table.total_numel()));
  for (int64_t i = 0; i < table.total_numel(); ++i) ASSERT_EQ(masters[i], own.params()[i]) << i;
}

}  // namespace
}  // namespace nanogpt
