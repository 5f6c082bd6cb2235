// Runs that stop on request: SIGTERM, SIGINT or SIGUSR1 mid-run finishes the step, writes the
// checkpoint, says where it stopped and exits with status 75; resuming it gives the records of a
// run that was never interrupted, bit for bit (dropout on, stops between and on evaluations).
// max_wall_minutes stops the same way; a bad value is a named error. A full disk while saving
// stops training with a named error and the last good checkpoint untouched.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <string>

#include "e2e_util.h"

namespace nanogpt::e2e {
namespace {

const char* kKeys =
    "--dataset=sc --batch_size=4 --gradient_accumulation_steps=2 --block_size=32 --n_layer=2 "
    "--n_head=2 --n_embd=32 --dropout=0.1 --learning_rate=3e-3 --warmup_iters=5 "
    "--lr_decay_iters=60 --min_lr=3e-4 --eval_interval=10 --eval_iters=2 --log_interval=1 "
    "--always_save_checkpoint=False";
constexpr int kIters = 60;

class StopCli : public ShakespeareTest {};

TEST_F(StopCli, ASignalledRunResumesBitIdenticallyToAnUninterruptedOne) {
  RunResult straight =
      run_nanogpt(dir_, std::string("train ") + kKeys +
                            " --out_dir=straight --max_iters=" + std::to_string(kIters));
  ASSERT_EQ(straight.exit_code, 0) << straight.output;
  const auto expected = timing_free_records(dir_ + "/straight/metrics.jsonl");
  ASSERT_EQ(expected.size(), size_t{kIters} + kIters / 10 + 1);

  // Stops at random steps (seeded: a failure reruns the same), and one at an evaluation's step.
  std::mt19937 pick(20261127);
  std::vector<std::pair<std::string, int>> stops = {{"TERM", 10}, {"INT", 0}, {"USR1", 0}};
  for (auto& [signal, after] : stops) {
    if (after == 0) after = 1 + static_cast<int>(pick() % 30);
  }
  for (const auto& [signal, after] : stops) {
    SCOPED_TRACE("SIG" + signal + " after iteration " + std::to_string(after));
    const std::string out = "stopped_" + signal;
    // The interrupted run's own max_iters is far away: only the signal ends it.
    RunResult r = run_and_signal(dir_,
                                 "OMP_NUM_THREADS=2 '" + std::string(NANOGPT_BINARY) + "' train " +
                                     kKeys + " --out_dir=" + out + " --max_iters=100000",
                                 out + "/metrics.jsonl", signal, after);
    ASSERT_EQ(r.exit_code, 75) << r.output;
    EXPECT_NE(r.output.find("stopped by SIG" + signal + " before iteration "), std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("continue with --init_from=resume; exit status 75"), std::string::npos)
        << r.output;
    RunResult resumed =
        run_nanogpt(dir_, std::string("train ") + kKeys + " --out_dir=" + out +
                              " --init_from=resume --max_iters=" + std::to_string(kIters));
    ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
    EXPECT_NE(resumed.output.find("resumed from"), std::string::npos) << resumed.output;
    EXPECT_EQ(timing_free_records(dir_ + "/" + out + "/metrics.jsonl"), expected);
  }
}

TEST_F(StopCli, MaxWallMinutesStopsTheSameWay) {
  // A limit shorter than the start-up: the run stops before its first step, with nothing to save.
  RunResult r = run_nanogpt(dir_, std::string("train ") + kKeys +
                                      " --out_dir=wall --max_iters=100000 --max_wall_minutes=1e-6");
  EXPECT_EQ(r.exit_code, 75) << r.output;
  EXPECT_NE(r.output.find("stopped by max_wall_minutes = 1e-06 before iteration 0 (of 100000): no "
                          "step taken, no checkpoint written; exit status 75"),
            std::string::npos)
      << r.output;
  // After a step: the checkpoint is written, and the run resumes from it.
  r = run_nanogpt(
      dir_, std::string("train ") + kKeys + " --out_dir=wall --max_iters=3 --eval_interval=100");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_nanogpt(dir_, std::string("train ") + kKeys +
                            " --out_dir=wall --init_from=resume --max_iters=100000 "
                            "--eval_interval=100 --max_wall_minutes=1e-6");
  EXPECT_EQ(r.exit_code, 75) << r.output;
  EXPECT_NE(r.output.find("before iteration 3 (of 100000)"), std::string::npos) << r.output;

  r = run_nanogpt(dir_, std::string("train ") + kKeys + " --max_wall_minutes=-1");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("max_wall_minutes = -1: expected a number of minutes >= 0"),
            std::string::npos)
      << r.output;
}

// A full disk (here: writes past 100 kB fail with EFBIG, SIGXFSZ ignored, as they would with
// ENOSPC) while saving: a named error, training stops saying where the last good checkpoint is,
// and that checkpoint is byte for byte what it was and resumes.
TEST_F(StopCli, AFullDiskStopsTrainingAndKeepsTheLastGoodCheckpoint) {
  const std::string keys = std::string(kKeys) + " --out_dir=disk --eval_interval=5";
  RunResult r = run_nanogpt(dir_, "train " + keys + " --max_iters=5");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::map<std::string, std::string> before;
  for (const auto& f : std::filesystem::directory_iterator(dir_ + "/disk/ckpt")) {
    before[f.path().filename().string()] = read_file_bytes(f.path().string());
  }
  ASSERT_GE(before.size(), 4u);
  r = run_command(dir_, "trap '' XFSZ; OMP_NUM_THREADS=2 prlimit --fsize=100000 '" +
                            std::string(NANOGPT_BINARY) + "' train " + keys +
                            " --init_from=resume --max_iters=20");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("failed after 100000 bytes: File too large"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("training stopped at iteration 10: the checkpoint in disk/ckpt (written "
                          "before this run) is unchanged; resume from it with --init_from=resume"),
            std::string::npos)
      << r.output;
  std::map<std::string, std::string> after;
  for (const auto& f : std::filesystem::directory_iterator(dir_ + "/disk/ckpt")) {
    after[f.path().filename().string()] = read_file_bytes(f.path().string());
  }
  EXPECT_TRUE(after == before) << "the last good checkpoint changed";
  for (const auto& f : std::filesystem::directory_iterator(dir_ + "/disk")) {
    EXPECT_EQ(f.path().filename().string().find("tmp"), std::string::npos) << f.path();
  }
  r = run_nanogpt(dir_, "train " + keys + " --init_from=resume --max_iters=10");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("resumed from disk/ckpt at iteration 5"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace nanogpt::e2e
