// Data-parallel training under mpirun: 2 ranks equal 1 rank (the rank streams partition the one
// global stream), runs resume across world sizes, and bad launches fail at start with named errors.
#include <gtest/gtest.h>

#include "mpi_util.h"

namespace nanogpt::mpi_test {
namespace {

TEST(DataParallel, TwoRanksEqualOneRankRandomSampling) {
  std::string dir = prepared_dir("equal_random");
  RunResult one = run_single(dir, "train " + tiny_keys("r1") + " --max_iters=8");
  ASSERT_EQ(one.exit_code, 0) << one.output;
  RunResult two = run_ranks(dir, 2, "train " + tiny_keys("r2") + " --max_iters=8");
  ASSERT_EQ(two.exit_code, 0) << two.output;
  EXPECT_NE(two.output.find("2 ranks"), std::string::npos) << two.output;
  EXPECT_NE(two.output.find("comm wait"), std::string::npos) << two.output;
  const auto l1 = losses(dir + "/r1/metrics.jsonl"), l2 = losses(dir + "/r2/metrics.jsonl");
  expect_same_losses(l1, l2, "1 rank vs 2 ranks");
  ASSERT_FALSE(l1.empty());
  EXPECT_LT(l1.back(), l1.front() - 0.1) << "the run should learn, else equality proves little";
  // Rank 0 alone logs: one line per iteration, not two.
  size_t count = 0;
  for (size_t p = two.output.find("iter 3:"); p != std::string::npos;
       p = two.output.find("iter 3:", p + 1)) {
    ++count;
  }
  EXPECT_EQ(count, 1u) << two.output;
}

TEST(DataParallel, TwoRanksEqualOneRankSequentialSampling) {
  std::string dir = prepared_dir("equal_seq");
  const std::string keys = " --sampling=sequential --max_iters=6";
  RunResult one = run_single(dir, "train " + tiny_keys("s1") + keys);
  ASSERT_EQ(one.exit_code, 0) << one.output;
  RunResult two = run_ranks(dir, 2, "train " + tiny_keys("s2") + keys);
  ASSERT_EQ(two.exit_code, 0) << two.output;
  expect_same_losses(losses(dir + "/s1/metrics.jsonl"), losses(dir + "/s2/metrics.jsonl"),
                     "sequential, 1 rank vs 2 ranks");
}

TEST(DataParallel, SmallBucketsOverlappedWithTheBackwardGiveTheSameLosses) {
  std::string dir = prepared_dir("buckets");
  RunResult one = run_single(dir, "train " + tiny_keys("b1") + " --max_iters=4");
  ASSERT_EQ(one.exit_code, 0) << one.output;
  // 0.002 MB = 500 floats: every block's gradients start their own all-reduce during the backward.
  RunResult two = run_ranks(dir, 2, "train " + tiny_keys("b2") + " --max_iters=4 --bucket_cap_mb=0.002");
  ASSERT_EQ(two.exit_code, 0) << two.output;
  expect_same_losses(losses(dir + "/b1/metrics.jsonl"), losses(dir + "/b2/metrics.jsonl"),
                     "1 rank vs 2 ranks with small buckets");
}

TEST(DataParallel, ZeroOneEqualsPlainDataParallelAndResumesAsPlain) {
  std::string dir = prepared_dir("zero1");
  RunResult plain = run_ranks(dir, 2, "train " + tiny_keys("plain") + " --max_iters=8");
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  // ZeRO-1 for 4 steps (its checkpoint holds the whole optimizer state), then 4 more steps on
  // 1 rank without sharding from that checkpoint.
  RunResult z = run_ranks(dir, 2, "train " + tiny_keys("z") + " --max_iters=4 --zero_stage=1");
  ASSERT_EQ(z.exit_code, 0) << z.output;
  RunResult r = run_single(dir, "train " + tiny_keys("z") + " --max_iters=8 --init_from=resume");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto plain_losses = losses(dir + "/plain/metrics.jsonl");
  expect_same_losses(plain_losses, losses(dir + "/z/metrics.jsonl"),
                     "ZeRO-1 on 2 ranks then plain on 1 vs plain on 2 ranks");
  // And ZeRO-1 from a plain checkpoint: 2 ranks sharded resume the plain run's step-4 state.
  RunResult p4 = run_ranks(dir, 2, "train " + tiny_keys("p") + " --max_iters=4");
  ASSERT_EQ(p4.exit_code, 0) << p4.output;
  RunResult z8 = run_ranks(dir, 2,
                           "train " + tiny_keys("p") + " --max_iters=8 --init_from=resume --zero_stage=1");
  ASSERT_EQ(z8.exit_code, 0) << z8.output;
  expect_same_losses(plain_losses, losses(dir + "/p/metrics.jsonl"),
                     "plain then ZeRO-1 vs plain throughout");
}

TEST(DataParallel, ResumesAcrossWorldSizes) {
  std::string dir = prepared_dir("resume");
  const std::string keys = tiny_keys("run");
  RunResult whole = run_single(dir, "train " + tiny_keys("whole") + " --max_iters=8");
  ASSERT_EQ(whole.exit_code, 0) << whole.output;
  const auto reference = losses(dir + "/whole/metrics.jsonl");

  // 1 rank for 4 steps, then 2 ranks from its checkpoint.
  RunResult a = run_single(dir, "train " + keys + " --max_iters=4");
  ASSERT_EQ(a.exit_code, 0) << a.output;
  RunResult b = run_ranks(dir, 2, "train " + keys + " --max_iters=8 --init_from=resume");
  ASSERT_EQ(b.exit_code, 0) << b.output;
  EXPECT_NE(b.output.find("resumed from"), std::string::npos) << b.output;
  expect_same_losses(reference, losses(dir + "/run/metrics.jsonl"), "1 rank then 2 ranks");

  // 2 ranks for 4 steps, then 1 rank from their checkpoint.
  std::filesystem::remove_all(dir + "/run");
  RunResult c = run_ranks(dir, 2, "train " + keys + " --max_iters=4");
  ASSERT_EQ(c.exit_code, 0) << c.output;
  RunResult d = run_single(dir, "train " + keys + " --max_iters=8 --init_from=resume");
  ASSERT_EQ(d.exit_code, 0) << d.output;
  expect_same_losses(reference, losses(dir + "/run/metrics.jsonl"), "2 ranks then 1 rank");
}

TEST(DataParallel, ContinuesANanoGptCheckpointWholeOrSharded) {
  // nanoGPT's ckpt.pt (ours exported) continued on 1 rank and on 2 ranks with ZeRO-1 (each rank
  // takes its shard of AdamW's moments): the same losses.
  std::string dir = prepared_dir("nanogpt_ckpt");
  RunResult a = run_single(dir, "train " + tiny_keys("a") + " --gelu=exact --max_iters=4");
  ASSERT_EQ(a.exit_code, 0) << a.output;
  RunResult e = run_single(dir, "export --format=nanogpt --out_dir=a --output=a.pt");
  ASSERT_EQ(e.exit_code, 0) << e.output;
  RunResult one = run_single(dir, "train " + tiny_keys("one") + " --init_from=a.pt --max_iters=8");
  ASSERT_EQ(one.exit_code, 0) << one.output;
  RunResult two = run_ranks(
      dir, 2, "train " + tiny_keys("two") + " --init_from=a.pt --max_iters=8 --zero_stage=1");
  ASSERT_EQ(two.exit_code, 0) << two.output;
  for (const RunResult* r : {&one, &two}) {
    EXPECT_NE(r->output.find("continuing nanoGPT's run a.pt at iteration 4"), std::string::npos)
        << r->output;
  }
  const auto whole = losses(dir + "/one/metrics.jsonl");
  EXPECT_EQ(whole.size(), 4u);
  expect_same_losses(whole, losses(dir + "/two/metrics.jsonl"),
                     "from ckpt.pt: 1 rank vs 2 ranks with ZeRO-1");
}

TEST(DataParallel, AccumulationNotDivisibleByRanksFailsAtStart) {
  std::string dir = prepared_dir("indivisible");
  RunResult r = run_ranks(dir, 2,
                          "train " + tiny_keys("x") + " --gradient_accumulation_steps=3 --max_iters=2");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("gradient_accumulation_steps = 3 is not divisible by the number of "
                          "ranks 2"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir + "/x/ckpt")) << "nothing may be written";
}

TEST(DataParallel, RanksWithDifferentConfigsFailAtStart) {
  std::string dir = prepared_dir("mismatch");
  const std::string cmd = "train " + tiny_keys("x");
  // Two programs in one job (MPMD): rank 1 asks for another max_iters.
  RunResult r = e2e::run_command(
      dir, "OMP_NUM_THREADS=1 mpirun --allow-run-as-root --oversubscribe --bind-to none -np 1 " +
               binary() + " " + cmd + " --max_iters=5 : -np 1 " + binary() + " " + cmd +
               " --max_iters=6");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("rank 1 was started with a different configuration than rank 0"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("max_iters = 5 (rank 0) vs 6 (rank 1)"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace nanogpt::mpi_test
