// A training run killed with SIGKILL at arbitrary moments (checkpointing every iteration) always
// leaves a checkpoint that loads and resumes.
#include <gtest/gtest.h>

#include "e2e_util.h"

namespace nanogpt::e2e {
namespace {

TEST(Crash, KillNineDuringCheckpointingLeavesALoadableCheckpoint) {
  std::string dir = scratch_dir("crash");
  RunResult p = run_nanogpt(
      dir, "prepare --tokenizer=char --input=" + shakespeare_path() + " --out_dir=data/sc");
  ASSERT_EQ(p.exit_code, 0) << p.output;
  const std::string keys =
      "--dataset=sc --batch_size=2 --gradient_accumulation_steps=1 --block_size=16 --n_layer=1 "
      "--n_head=1 --n_embd=16 "
      "--eval_interval=1 --eval_iters=1 --log_interval=100 --always_save_checkpoint=True "
      "--out_dir=run";
  // First run: make sure a checkpoint exists, then keep killing runs that resume from it.
  RunResult first = run_nanogpt(dir, "train " + keys + " --max_iters=3");
  ASSERT_EQ(first.exit_code, 0) << first.output;
  for (const char* after : {"0.3", "0.7", "1.1", "1.6"}) {
    std::string cmd = std::string("timeout -s KILL ") + after + " '" + NANOGPT_BINARY + "' train " +
                      keys + " --init_from=resume --max_iters=1000000 > /dev/null 2>&1";
    std::system(("cd '" + dir + "' && " + cmd).c_str());
    RunResult r = run_nanogpt(dir, "train " + keys + " --init_from=resume --eval_only=True");
    ASSERT_EQ(r.exit_code, 0) << "after kill at " << after << " s:\n" << r.output;
    EXPECT_NE(r.output.find("resumed from"), std::string::npos) << r.output;
  }
}

}  // namespace
}  // namespace nanogpt::e2e
