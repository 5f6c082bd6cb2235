// Data parallelism for a device backend (a GPU's: gradients in the backend's memory, NCCL), run on
// the CPU: tests/mpi/off_host_trainer_main.cpp trains on an off-host CPU backend with MPI presented
// as a communicator of device memory, under mpirun. 2 ranks must give the losses of 1 rank with
// the same global accumulation (the host's run), and the host's 2 ranks' bit for bit, for AdamW in
// float32 and Muon in bfloat16. ZeRO-1 on the device backend (its shards, the sharded master
// weights and the optimizer's state in the backend's memory) must give the host's ZeRO-1 losses
// and checkpoint bytes, in float32 and in bfloat16 with Muon, and resume. (NCCL itself:
// scripts/gpu_check.sh.)
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

// out_dir's last checkpoint: its weights' and its optimizer state's bytes.
std::string checkpoint_bytes(const std::string& out_dir) {
  return e2e::read_file_bytes(out_dir + "/ckpt/model.safetensors") +
         e2e::read_file_bytes(out_dir + "/ckpt/optimizer.safetensors");
}

// ZeRO-1, 2 ranks on the device backend against 2 on the host: the same losses and the same
// checkpoint (gathered from the backend's memory to rank 0), then a resume on the device.
void expect_device_zero_one_equals_the_hosts(const std::string& name, const std::string& keys) {
  const std::string dir = prepared_dir(name);
  const std::string zero = keys + " --zero_stage=1";
  RunResult host = run_ranks(dir, 2, "train " + tiny_keys("h") + zero + " --max_iters=8");
  ASSERT_EQ(host.exit_code, 0) << host.output;
  RunResult device = run_device_ranks(dir, 2, tiny_keys("d") + zero + " --max_iters=8");
  ASSERT_EQ(device.exit_code, 0) << device.output;
  EXPECT_NE(device.output.find("the one trainer on backend 'cpu-off-host'"), std::string::npos)
      << device.output;
  EXPECT_NE(device.output.find("ZeRO-1"), std::string::npos) << device.output;
  const auto lh = losses(dir + "/h/metrics.jsonl");
  expect_same_losses(lh, losses(dir + "/d/metrics.jsonl"), name + ": ZeRO-1, host vs device");
  ASSERT_FALSE(lh.empty());
  EXPECT_LT(lh.back(), lh.front() - 0.1) << "the run should learn, else equality proves little";
  EXPECT_TRUE(checkpoint_bytes(dir + "/h") == checkpoint_bytes(dir + "/d"))
      << name << ": the device ranks' checkpoint differs from the host ranks'";
  // Each device rank reads its shard back into the backend's memory and goes on as the host does.
  RunResult host_on = run_ranks(dir, 2, "train " + tiny_keys("h") + zero +
                                            " --max_iters=10 --init_from=resume");
  ASSERT_EQ(host_on.exit_code, 0) << host_on.output;
  RunResult device_on =
      run_device_ranks(dir, 2, tiny_keys("d") + zero + " --max_iters=10 --init_from=resume");
  ASSERT_EQ(device_on.exit_code, 0) << device_on.output;
  EXPECT_NE(device_on.output.find("iter 9:"), std::string::npos) << device_on.output;
  expect_same_losses(losses(dir + "/h/metrics.jsonl"), losses(dir + "/d/metrics.jsonl"),
                     name + ": ZeRO-1 resumed, host vs device");
}

TEST(DeviceDataParallel, ZeroOneInFloat32MatchesTheHostsZeroOne) {
  expect_device_zero_one_equals_the_hosts("device_zero_f32", "");
}

// bfloat16 shards the float32 master weights; Muon shares its orthogonalizations over the shards.
TEST(DeviceDataParallel, ZeroOneMuonInBfloat16MatchesTheHostsZeroOne) {
  expect_device_zero_one_equals_the_hosts("device_zero_muon",
                                          " --optimizer=muon --dtype=bfloat16");
}

}  // namespace
}  // namespace nanogpt::mpi_test
