// Data parallelism for a device backend (a GPU's: gradients in the backend's memory, NCCL), run on
// the CPU: tests/mpi/off_host_trainer_main.cpp trains on an off-host CPU backend with MPI presented
// as a communicator of device memory, under mpirun. 2 ranks must give the losses of 1 rank with
// the same global accumulation (the host's run), and the host's 2 ranks' bit for bit, for AdamW in
// float32 and Muon in bfloat16; ZeRO-1 is refused by name. (NCCL itself: scripts/gpu_check.sh.)
#include <gtest/gtest.h>

#include "mpi_util.h"

namespace nanogpt::mpi_test {
namespace {

RunResult run_device_ranks(const std::string& dir, int ranks, const std::string& keys) {
  return e2e::run_command(
      dir, "OMP_NUM_THREADS=1 " + mpirun(ranks) + " '" + NANOGPT_OFF_HOST_TRAINER + "' " + keys);
}

TEST(DeviceDataParallel, TwoRanksOnADeviceBackendEqualOneRankOnTheHost) {
  const std::string dir = prepared_dir("device_dp");
  RunResult one = run_single(dir, "train " + tiny_keys("h1") + " --max_iters=8");
  ASSERT_EQ(one.exit_code, 0) << one.output;
  RunResult two = run_device_ranks(dir, 2, tiny_keys("d2") + " --max_iters=8");
  ASSERT_EQ(two.exit_code, 0) << two.output;
  EXPECT_NE(two.output.find("the one trainer on backend 'cpu-off-host'"), std::string::npos)
      << two.output;
  EXPECT_NE(two.output.find("as device memory"), std::string::npos) << two.output;
  EXPECT_NE(two.output.find("comm wait"), std::string::npos) << two.output;
  const auto l1 = losses(dir + "/h1/metrics.jsonl");
  expect_same_losses(l1, losses(dir + "/d2/metrics.jsonl"), "1 host rank vs 2 device ranks");
  ASSERT_FALSE(l1.empty());
  EXPECT_LT(l1.back(), l1.front() - 0.1) << "the run should learn, else equality proves little";
  // The checkpoint written by rank 0 from device memory resumes on the host, on one rank.
  RunResult resumed =
      run_single(dir, "train " + tiny_keys("d2") + " --max_iters=10 --init_from=resume");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("iter 9:"), std::string::npos) << resumed.output;
}

TEST(DeviceDataParallel, MuonInBfloat16MatchesTheHostsTwoRanks) {
  const std::string dir = prepared_dir("device_dp_muon");
  const std::string keys = " --max_iters=6 --optimizer=muon --dtype=bfloat16";
  RunResult host = run_ranks(dir, 2, "train " + tiny_keys("h2") + keys);
  ASSERT_EQ(host.exit_code, 0) << host.output;
  RunResult device = run_device_ranks(dir, 2, tiny_keys("d2") + keys);
  ASSERT_EQ(device.exit_code, 0) << device.output;
  expect_same_losses(losses(dir + "/h2/metrics.jsonl"), losses(dir + "/d2/metrics.jsonl"),
                     "Muon bf16, 2 host ranks vs 2 device ranks");
}

TEST(DeviceDataParallel, ZeroOneIsRefusedByName) {
  const std::string dir = prepared_dir("device_dp_zero");
  RunResult r = run_device_ranks(dir, 2, tiny_keys("z") + " --max_iters=2 --zero_stage=1");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("zero_stage=1 does not run on a device backend"), std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace nanogpt::mpi_test
