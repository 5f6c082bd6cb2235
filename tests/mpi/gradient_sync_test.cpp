// The pieces of data-parallel training that run in one process: GPT's grad-ready hook reports
// ranges that really are final and cover the arena in backward order; GradientSync groups them
// into buckets and all-reduces every element exactly once; the single-process communicator is the
// identity; DataParallel's launch checks.
#include <gtest/gtest.h>

#include <vector>

#include "core/check.h"
#include "core/rng.h"
#include "distributed/data_parallel.h"
#include "distributed/gradient_sync.h"
#include "distributed/single_process_communicator.h"
#include "kernels/cpu_backend.h"
#include "model/gpt.h"
#include "../model/random_tokens.h"

namespace nanogpt {
namespace {

using testing::random_tokens;

// A world of one that records the ranges handed to start_all_reduce_sum.
class RecordingCommunicator : public Communicator {
 public:
  explicit RecordingCommunicator(const float* base) : base_(base) {}
  int rank() const override { return 0; }
  int size() const override { return 2; }
  int local_size() const override { return 2; }
  void all_reduce_sum(float*, int64_t) override {}
  void all_reduce_sum(double*, int64_t) override {}
  void all_reduce_max(double*, int64_t) override {}
  void start_all_reduce_sum(float* data, int64_t n) override {
    started.push_back({data - base_, data - base_ + n});
  }
  void progress() override { ++progress_calls; }
  double wait_all() override {
    ++waits;
    return 0;
  }
  void reduce_scatter_sum(const float*, float*, const std::vector<int64_t>&) override {}
  void all_gather(float*, const std::vector<int64_t>&) override {}
  void all_gather(uint16_t*, const std::vector<int64_t>&) override {}
  void broadcast(void*, int64_t, int) override {}
  void barrier() override {}
  void abort_job(int) override {}
  std::string describe() const override { return "recording"; }

  std::vector<std::pair<int64_t, int64_t>> started;
  int progress_calls = 0, waits = 0;

 private:
  const float* base_;
};

ModelConfig tiny() {
  ModelConfig c;
  c.n_layer = 3;
  c.n_head = 2;
  c.n_embd = 32;
  c.block_size = 16;
  c.vocab_size = 67;
  return c;
}

class GradReadyHook : public ::testing::TestWithParam<bool> {};

// With U-net skips (GetParam()) the skip weights' gradients, complete only after the last
// decoder block's backward, lie in the embeddings' range, reported last.
TEST_P(GradReadyHook, RangesAreFinalAndCoverTheArenaFromTheEnd) {
  ModelConfig c = tiny();
  c.unet_skips = GetParam();
  GPT model(c);
  model.init_weights(3);
  CpuBackend ctx;
  const int B = 2, T = 16;
  const auto x = random_tokens(B * T, 67, 1), y = random_tokens(B * T, 67, 2);
  std::vector<std::pair<int64_t, int64_t>> ranges;
  std::vector<std::vector<float>> at_report;  // each range's values when it was reported
  model.set_grad_ready_hook([&](int64_t begin, int64_t end) {
    ranges.push_back({begin, end});
    at_report.emplace_back(model.grads().begin() + begin, model.grads().begin() + end);
  });
  model.zero_grad();
  model.forward(ctx, x.data(), y.data(), B, T, true);
  model.backward(ctx);
  // ln_f, 3 blocks, embeddings.
  ASSERT_EQ(ranges.size(), 5u);
  EXPECT_EQ(ranges.front().second, model.table().total_numel());
  EXPECT_EQ(ranges.back().first, 0);
  for (size_t i = 1; i < ranges.size(); ++i) EXPECT_EQ(ranges[i].second, ranges[i - 1].first);
  EXPECT_EQ(ranges[4].second, model.table().at("h.0.ln_1.weight").offset);
  // Nothing changed after it was reported.
  for (size_t i = 0; i < ranges.size(); ++i) {
    const std::vector<float> now(model.grads().begin() + ranges[i].first,
                                 model.grads().begin() + ranges[i].second);
    EXPECT_EQ(now, at_report[i]) << "range " << i << " changed after it was reported final";
  }
  // Without a hook nothing is called.
  model.set_grad_ready_hook({});
  model.forward(ctx, x.data(), y.data(), B, T, true);
  model.backward(ctx);
  EXPECT_EQ(ranges.size(), 5u);
}

INSTANTIATE_TEST_SUITE_P(Plain, GradReadyHook, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "UnetSkips" : "Plain"; });

TEST(GradientSync, BucketsCoverEveryElementOnceInBackwardOrder) {
  std::vector<float> grads(1000);
  RecordingCommunicator comm(grads.data());
  GradientSync sync(comm, grads.data(), 1000, /*bucket_elems=*/250);
  // Ranges as a backward reports them: from the end to the start.
  const int64_t cuts[] = {1000, 900, 700, 650, 400, 100, 0};
  for (size_t i = 1; i < std::size(cuts); ++i) sync.on_ready(cuts[i], cuts[i - 1]);
  EXPECT_EQ(comm.started.size(), 3u) << "three buckets reach 250 during the backward";
  EXPECT_EQ(comm.waits, 0);
  sync.finish();  // starts the last 100 elements, then waits
  EXPECT_EQ(comm.waits, 1);
  ASSERT_EQ(comm.started.size(), 4u);
  EXPECT_EQ(comm.started[0], (std::pair<int64_t, int64_t>{700, 1000}));
  EXPECT_EQ(comm.started[1], (std::pair<int64_t, int64_t>{400, 700}));
  EXPECT_EQ(comm.started[2], (std::pair<int64_t, int64_t>{100, 400}));
  EXPECT_EQ(comm.started[3], (std::pair<int64_t, int64_t>{0, 100}));
  EXPECT_GE(comm.progress_calls, 6);
  // The next step starts over.
  for (size_t i = 1; i < std::size(cuts); ++i) sync.on_ready(cuts[i], cuts[i - 1]);
  sync.finish();
  EXPECT_EQ(comm.started.size(), 8u);
}

TEST(GradientSync, RangesOutOfOrderOrMissingAreErrors) {
  std::vector<float> grads(100);
  RecordingCommunicator comm(grads.data());
  GradientSync sync(comm, grads.data(), 100, 10);
  EXPECT_THROW(sync.on_ready(0, 50), Error);  // [50, 100) was not reported yet
  GradientSync partial(comm, grads.data(), 100, 10);
  partial.on_ready(50, 100);
  EXPECT_THROW(partial.finish(), Error);  // [0, 50) never reported
}

TEST(SingleProcessCommunicator, CollectivesOfOneAreTheIdentity) {
  SingleProcessCommunicator comm;
  EXPECT_EQ(comm.size(), 1);
  std::vector<float> in = {1, 2, 3}, out(3);
  comm.reduce_scatter_sum(in.data(), out.data(), {3});
  EXPECT_EQ(out, in);
  comm.all_reduce_sum(in.data(), 3);
  comm.all_gather(in.data(), {3});
  EXPECT_EQ(in, (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(comm.wait_all(), 0);
}

TEST(DataParallelSetup, AccumulationMustDivideAndStreamsInterleave) {
  std::vector<float> none(1);
  RecordingCommunicator two_ranks(none.data());
  try {
    DataParallel dp(two_ranks, 5, 100);
    FAIL() << "5 micro-steps cannot be split over 2 ranks";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--gradient_accumulation_steps=6"), std::string::npos)
        << e.what();
  }
  DataParallel dp(two_ranks, 6, 100);
  EXPECT_EQ(dp.local_accumulation(), 3);
  EXPECT_EQ(dp.global_micro(0), 0);  // rank 0 of 2: micro-batches 0, 2, 4 of the step
  EXPECT_EQ(dp.global_micro(2), 4);
}

TEST(DataParallelSetup, ThreadsPerRank) {
  EXPECT_EQ(threads_per_rank(3, 2), 3);  // set explicitly: kept
  EXPECT_GE(threads_per_rank(0, 1), 1);
  EXPECT_GE(threads_per_rank(0, 64), 1);
}

}  // namespace
}  // namespace nanogpt
