// The sequence-length warmup (context_warmup_iters) under mpirun: each rank cuts its own
// micro-batches into the short sequences, so 2 ranks equal 1 rank, plainly and with ZeRO-1.
#include <gtest/gtest.h>

#include "mpi_util.h"

namespace nanogpt::mpi_test {
namespace {

std::string warmup_keys(const std::string& out_dir) {
  return tiny_keys(out_dir) + " --context_warmup_iters=6 --context_warmup_start=8";
}

TEST(ContextWarmupDataParallel, TwoRanksEqualOneRankPlainAndZeroOne) {
  std::string dir = prepared_dir("context_warmup");
  RunResult one = run_single(dir, "train " + warmup_keys("c1") + " --max_iters=8");
  ASSERT_EQ(one.exit_code, 0) << one.output;
  EXPECT_NE(one.output.find("sequence-length warmup: context 8 ->"), std::string::npos)
      << one.output;
  RunResult two = run_ranks(dir, 2, "train " + warmup_keys("c2") + " --max_iters=8");
  ASSERT_EQ(two.exit_code, 0) << two.output;
  RunResult zero =
      run_ranks(dir, 2, "train " + warmup_keys("cz") + " --max_iters=8 --zero_stage=1");
  ASSERT_EQ(zero.exit_code, 0) << zero.output;
  const auto l1 = losses(dir + "/c1/metrics.jsonl");
  expect_same_losses(l1, losses(dir + "/c2/metrics.jsonl"), "context warmup, 1 rank vs 2 ranks");
  expect_same_losses(l1, losses(dir + "/cz/metrics.jsonl"), "context warmup, 1 rank vs ZeRO-1");
  ASSERT_FALSE(l1.empty());
  EXPECT_LT(l1.back(), l1.front() - 0.1) << "the run should learn, else equality proves little";
}

}  // namespace
}  // namespace nanogpt::mpi_test
