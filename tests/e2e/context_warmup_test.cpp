// The sequence-length warmup end to end (context_warmup_iters): the log says the schedule, the
// first step trains on the same batch cut into short sequences (its loss differs from the
// whole-context run's; with the warmup off the runs are identical), resume is bit-exact inside
// the warmup in float32, bfloat16 and float16, and a bad start is refused by name.
#include <gtest/gtest.h>

#include "e2e_util.h"

namespace nanogpt::e2e {
namespace {

const char* kTiny =
    "--dataset=sc --batch_size=4 --gradient_accumulation_steps=2 --block_size=32 --n_layer=2 "
    "--n_head=2 --n_embd=32 --optimizer=muon --learning_rate=3e-3 --warmup_iters=2 "
    "--min_lr=3e-4 --eval_iters=2 --log_interval=1 --eval_interval=5 "
    "--always_save_checkpoint=True --position=rotary --dropout=0.1";

class ContextWarmupCli : public ShakespeareTest {};

// A straight run of 16 steps equals 10 steps, a resume from that checkpoint and 6 more; the
// warmup (contexts 8, 16 until 6 and 12, then 32) is mid-way at the resume.
void expect_bit_exact_resume(const std::string& dir, const std::string& keys,
                             const std::string& tag) {
  const std::string common = std::string(kTiny) +
                             " --context_warmup_iters=12 --context_warmup_start=8 "
                             "--lr_decay_iters=16 " +
                             keys;
  RunResult a = run_nanogpt(dir, "train " + common + " --max_iters=16 --out_dir=s_" + tag);
  ASSERT_EQ(a.exit_code, 0) << a.output;
  EXPECT_NE(a.output.find("sequence-length warmup: context 8 -> 32 by doubling over the first 12 "
                          "iterations (8 until 6, 16 until 12)"),
            std::string::npos)
      << a.output;
  RunResult b1 = run_nanogpt(dir, "train " + common + " --max_iters=10 --out_dir=h_" + tag);
  ASSERT_EQ(b1.exit_code, 0) << b1.output;
  RunResult b2 =
      run_nanogpt(dir, "train " + common + " --max_iters=16 --init_from=resume --out_dir=h_" + tag);
  ASSERT_EQ(b2.exit_code, 0) << b2.output;
  const auto straight = timing_free_records(dir + "/s_" + tag + "/metrics.jsonl");
  EXPECT_GE(straight.size(), 16u + 4u) << tag;
  EXPECT_EQ(straight, timing_free_records(dir + "/h_" + tag + "/metrics.jsonl")) << tag;
}

TEST_F(ContextWarmupCli, ResumesBitExactInsideTheWarmupInEveryDtype) {
  expect_bit_exact_resume(dir_, "--dtype=float32", "f32");
  expect_bit_exact_resume(dir_, "--dtype=bfloat16", "bf16");
  expect_bit_exact_resume(dir_, "--dtype=float16", "f16");
}

TEST_F(ContextWarmupCli, ShortContextsAreWhatTheFirstStepsTrainOn) {
  // The same batch (same seed and loader), cut into sequences of 8: the loss of step 0 differs
  // from the whole-context run's (each token sees at most 7 before it); with the warmup off
  // (context_warmup_iters = 0, whatever the start) the runs are identical.
  const std::string common = std::string(kTiny) + " --max_iters=1 --lr_decay_iters=16";
  RunResult whole = run_nanogpt(dir_, "train " + common + " --out_dir=whole");
  RunResult off = run_nanogpt(
      dir_, "train " + common + " --context_warmup_iters=0 --context_warmup_start=8 --out_dir=off");
  RunResult warm = run_nanogpt(
      dir_, "train " + common + " --context_warmup_iters=12 --context_warmup_start=8 --out_dir=w");
  ASSERT_EQ(whole.exit_code, 0) << whole.output;
  ASSERT_EQ(off.exit_code, 0) << off.output;
  ASSERT_EQ(warm.exit_code, 0) << warm.output;
  auto first_loss = [&](const std::string& run) {
    for (const auto& j : read_jsonl(dir_ + "/" + run + "/metrics.jsonl")) {
      if (j.contains("loss") && j["iter"] == 0) return j["loss"].dump();
    }
    return std::string("none");
  };
  EXPECT_EQ(first_loss("whole"), first_loss("off"));
  EXPECT_NE(first_loss("whole"), first_loss("w"));
  EXPECT_NE(first_loss("w"), "none");
}

TEST_F(ContextWarmupCli, ABadStartIsRefusedByName) {
  RunResult r = run_nanogpt(dir_, std::string("train ") + kTiny +
                                      " --max_iters=2 --context_warmup_iters=4 "
                                      "--context_warmup_start=12 --out_dir=bad");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("context_warmup_start = 12 with block_size = 32"), std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace nanogpt::e2e
