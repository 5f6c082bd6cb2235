// optimizer='muon' under mpirun: plain data parallelism on 2 ranks (each rank orthogonalizes half
// of the hidden matrices and broadcasts them) equals the single-process run and resumes across
// world sizes; ZeRO-1 (float32, bfloat16 with sharded masters) equals plain and resumes.
#include <gtest/gtest.h>

#include "mpi_util.h"

namespace nanogpt::mpi_test {
namespace {

std::string muon_keys(const std::string& out_dir) {
  return tiny_keys(out_dir) + " --optimizer=muon --muon_momentum_warmup_iters=4";
}

TEST(MuonDataParallel, TwoRanksEqualOneRank) {
  std::string dir = prepared_dir("muon_equal");
  RunResult one = run_single(dir, "train " + muon_keys("m1") + " --max_iters=8");
  ASSERT_EQ(one.exit_code, 0) << one.output;
  RunResult two = run_ranks(dir, 2, "train " + muon_keys("m2") + " --max_iters=8");
  ASSERT_EQ(two.exit_code, 0) << two.output;
  EXPECT_NE(two.output.find("2 ranks"), std::string::npos) << two.output;
  const auto l1 = losses(dir + "/m1/metrics.jsonl"), l2 = losses(dir + "/m2/metrics.jsonl");
  // Equal losses need every rank to hold the same weights after each step: the matrices each
  // rank did not orthogonalize come from the broadcasts.
  expect_same_losses(l1, l2, "muon, 1 rank vs 2 ranks");
  ASSERT_FALSE(l1.empty());
  EXPECT_LT(l1.back(), l1.front() - 0.1) << "the run should learn, else equality proves little";
}

// Learning rates of their own for the embeddings and the untied head: every rank applies the same
// factors, and a ZeRO-1 shard's tensors keep their names (and so their factors).
TEST(MuonDataParallel, EmbeddingAndHeadRatesTwoRanksEqualOneRankPlainAndZeroOne) {
  // (the out_dir the helper appends comes after muon_keys' own, and wins)
  expect_one_two_and_zero_one_ranks_agree(
      prepared_dir("muon_rates"),
      muon_keys("unused") +
          " --tie_embeddings=False --embedding_learning_rate=3e-2 --head_learning_rate=2e-3 "
          "--max_iters=8",
      "rates");
}

TEST(MuonDataParallel, ResumesFromTwoRanksOnOne) {
  std::string dir = prepared_dir("muon_resume");
  RunResult whole = run_single(dir, "train " + muon_keys("whole") + " --max_iters=8");
  ASSERT_EQ(whole.exit_code, 0) << whole.output;
  RunResult a = run_ranks(dir, 2, "train " + muon_keys("run") + " --max_iters=4");
  ASSERT_EQ(a.exit_code, 0) << a.output;
  RunResult b = run_single(dir, "train " + muon_keys("run") + " --max_iters=8 --init_from=resume");
  ASSERT_EQ(b.exit_code, 0) << b.output;
  expect_same_losses(losses(dir + "/whole/metrics.jsonl"), losses(dir + "/run/metrics.jsonl"),
                     "muon, 2 ranks then 1 rank vs 1 rank throughout");
}

// ZeRO-1: the state sharded by contiguous ranges that cut matrices; the directions all-gathered,
// each matrix orthogonalized on one rank and broadcast (optim/muon.h). Equal to plain data
// parallelism, within the reduction-order tolerance (the gradients are reduce-scattered instead of
// all-reduced); its checkpoint (whole state) resumes on 1 rank without sharding.
TEST(MuonDataParallel, ZeroOneEqualsPlainAndResumesAsPlain) {
  std::string dir = prepared_dir("muon_zero1");
  RunResult plain = run_ranks(dir, 2, "train " + muon_keys("plain") + " --max_iters=8");
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  RunResult z = run_ranks(dir, 2, "train " + muon_keys("z") + " --max_iters=4 --zero_stage=1");
  ASSERT_EQ(z.exit_code, 0) << z.output;
  EXPECT_NE(z.output.find("ZeRO-1"), std::string::npos) << z.output;
  RunResult r = run_single(dir, "train " + muon_keys("z") + " --max_iters=8 --init_from=resume");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_same_losses(losses(dir + "/plain/metrics.jsonl"), losses(dir + "/z/metrics.jsonl"),
                     "muon: ZeRO-1 on 2 ranks then plain on 1 vs plain on 2 ranks");
}

// bfloat16 ZeRO-1 shards the float32 master weights too (Zero1's shard_masters): Muon updates the
// master shard; its Newton-Schulz runs in bfloat16. A run stopped and resumed equals a straight
// one.
TEST(MuonDataParallel, ZeroOneBf16ResumesExactly) {
  std::string dir = prepared_dir("muon_zero1_bf16");
  const std::string keys = " --zero_stage=1 --dtype=bfloat16";
  RunResult a = run_ranks(dir, 2, "train " + muon_keys("s") + keys + " --max_iters=8");
  ASSERT_EQ(a.exit_code, 0) << a.output;
  RunResult b1 = run_ranks(dir, 2, "train " + muon_keys("h") + keys + " --max_iters=4");
  ASSERT_EQ(b1.exit_code, 0) << b1.output;
  RunResult b2 =
      run_ranks(dir, 2, "train " + muon_keys("h") + keys + " --max_iters=8 --init_from=resume");
  ASSERT_EQ(b2.exit_code, 0) << b2.output;
  const auto straight = losses(dir + "/s/metrics.jsonl");
  EXPECT_EQ(straight, losses(dir + "/h/metrics.jsonl"));
  ASSERT_FALSE(straight.empty());
  EXPECT_LT(straight.back(), straight.front() - 0.1) << "the run should learn";
}

}  // namespace
}  // namespace nanogpt::mpi_test
