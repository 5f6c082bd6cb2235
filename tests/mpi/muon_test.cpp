// optimizer='muon' under mpirun: plain data parallelism on 2 ranks (each rank orthogonalizes half
// of the hidden matrices and broadcasts them) equals the single-process run, resumes across world
// sizes, and ZeRO-1 refuses Muon by name before anything is written.
#include <gtest/gtest.h>

#include <filesystem>

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

TEST(MuonDataParallel, ZeroStageOneIsRefusedByName) {
  std::string dir = prepared_dir("muon_zero1");
  RunResult r = run_ranks(dir, 2, "train " + muon_keys("z") + " --max_iters=2 --zero_stage=1");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("optimizer = 'muon' with zero_stage = 1"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir + "/z/ckpt")) << "nothing may be written";
}

}  // namespace
}  // namespace nanogpt::mpi_test
