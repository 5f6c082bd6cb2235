// Time to target end to end: a tiny char model with a generous target_loss and
// stop_at_target=True stops at the full evaluation that reaches it, saves its checkpoint, and
// metrics.jsonl and the final log lines hold the result; a resumed run keeps the record; the
// keys' errors reach the user.
#include <gtest/gtest.h>

#include "e2e_util.h"
#include "experiments/run_summary.h"

namespace nanogpt::e2e {
namespace {

constexpr const char* kTinyKeys =
    "--dataset=sc --batch_size=8 --gradient_accumulation_steps=1 --block_size=32 --n_layer=1 "
    "--n_head=2 --n_embd=32 --learning_rate=1e-2 --warmup_iters=0 --lr_decay_iters=400 "
    "--min_lr=1e-3 --eval_interval=1000 --eval_iters=2 --log_interval=1000 --dropout=0.0 "
    "--target_loss=3.0 --target_eval_interval=10";

class TimeToTargetE2e : public ShakespeareTest {};

TEST_F(TimeToTargetE2e, StopsAtTheTargetAndRecordsItAndAResumeKeepsIt) {
  RunResult run = run_nanogpt(
      dir_, std::string("train ") + kTinyKeys + " --max_iters=400 --stop_at_target=True --out_dir=run");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const auto records = read_jsonl(dir_ + "/run/metrics.jsonl");
  ASSERT_FALSE(records.empty());
  // One full-evaluation record per 10 iterations up to the stop, the last one reaching it.
  std::vector<nlohmann::json> full;
  for (const auto& r : records) {
    if (r.contains("full_val_loss")) full.push_back(r);
  }
  ASSERT_GE(full.size(), 2u) << run.output;  // the untrained model at iter 0 is far above 3.0
  for (size_t k = 0; k < full.size(); ++k) {
    EXPECT_EQ(full[k]["iter"].get<int64_t>(), static_cast<int64_t>(k) * 10);
    EXPECT_GE(full[k]["eval_s"].get<double>(), 0.0);
  }
  EXPECT_GT(full.front()["full_val_loss"].get<double>(), 3.0);
  EXPECT_LE(full.back()["full_val_loss"].get<double>(), 3.0);
  EXPECT_EQ(full.back()["target_reached"], true);
  const int64_t stop_iter = full.back()["iter"].get<int64_t>();
  EXPECT_LT(stop_iter, 400) << "stop_at_target did not end the run early";
  // The final record: the result, tokens = iterations x 8 x 32.
  const nlohmann::json& final = records.back();
  ASSERT_TRUE(final.contains("reached")) << final.dump();
  EXPECT_EQ(final["reached"], true);
  EXPECT_EQ(final["target_loss"], 3.0);
  EXPECT_EQ(final["target_iter"], stop_iter);
  EXPECT_EQ(final["tokens"].get<int64_t>(), stop_iter * 8 * 32);
  EXPECT_GE(final["wall_s"].get<double>(), final["eval_s"].get<double>());
  EXPECT_EQ(final["eval_s"], full.back()["eval_total_s"]);
  // No training step ran after the stop; the log says where and how long, then "done".
  for (const auto& r : records) {
    if (r.contains("iter")) {
      EXPECT_LE(r["iter"].get<int64_t>(), stop_iter) << r.dump();
    }
  }
  const std::string expected_line =
      "target val loss 3 reached at iter " + std::to_string(stop_iter) + ": ";
  const size_t line_at = run.output.find(expected_line);
  ASSERT_NE(line_at, std::string::npos) << run.output;
  EXPECT_NE(run.output.find("full evaluation), ", line_at), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("done: iteration " + std::to_string(stop_iter), line_at),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("saved checkpoint"), std::string::npos) << run.output;
  // The sweep's reader of metrics.jsonl takes the new records in its stride.
  RunCurves curves;
  ASSERT_NO_THROW(curves = read_run_curves(dir_ + "/run/metrics.jsonl"));
  EXPECT_FALSE(curves.evals.empty());

  // Resumed with stop_at_target where it stopped: the kept evaluation is at the target, so it
  // stops again at once, without evaluating again, and the record is the same.
  RunResult again = run_nanogpt(
      dir_, std::string("train ") + kTinyKeys +
                " --max_iters=400 --stop_at_target=True --init_from=resume --out_dir=run");
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.output.find("(0 steps in this run"), std::string::npos) << again.output;
  EXPECT_EQ(again.output.find("full val loss"), std::string::npos) << again.output;
  const auto again_records = read_jsonl(dir_ + "/run/metrics.jsonl");
  EXPECT_EQ(again_records.size(), records.size());
  EXPECT_EQ(again_records.back()["wall_s"], final["wall_s"]);

  // Resumed without stop_at_target, for 10 more iterations: the first reach stays the result.
  RunResult resumed = run_nanogpt(dir_, std::string("train ") + kTinyKeys + " --max_iters=" +
                                            std::to_string(stop_iter + 10) +
                                            " --init_from=resume --out_dir=run");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  const auto after = read_jsonl(dir_ + "/run/metrics.jsonl");
  const nlohmann::json& final2 = after.back();
  EXPECT_EQ(final2["reached"], true);
  EXPECT_EQ(final2["target_iter"], stop_iter);
  EXPECT_EQ(final2["wall_s"], final["wall_s"]);
  int finals = 0;
  for (const auto& r : after) finals += r.contains("reached") ? 1 : 0;
  EXPECT_EQ(finals, 1) << "the first run's final record should have been replaced";
}

TEST_F(TimeToTargetE2e, NotReachedSaysTheBestAndTheKeysErrorsReachTheUser) {
  RunResult run = run_nanogpt(dir_, std::string("train ") + kTinyKeys +
                                        " --target_loss=0.01 --max_iters=10 --out_dir=miss");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("target val loss 0.01 not reached (best "), std::string::npos)
      << run.output;
  const auto records = read_jsonl(dir_ + "/miss/metrics.jsonl");
  ASSERT_FALSE(records.empty());
  EXPECT_EQ(records.back()["reached"], false);
  EXPECT_EQ(records.back()["evaluations"], 2);  // iter 0 and the last (10)

  RunResult bad = run_nanogpt(dir_, std::string("train ") + kTinyKeys +
                                        " --target_eval_interval=0 --max_iters=1 --out_dir=bad");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("target_eval_interval = 0"), std::string::npos) << bad.output;
  RunResult wsd = run_nanogpt(dir_, std::string("train ") + kTinyKeys +
                                        " --lr_schedule=wsd --cooldown=cosine --max_iters=1 "
                                        "--out_dir=bad");
  EXPECT_NE(wsd.exit_code, 0);
  EXPECT_NE(wsd.output.find("cooldown = 'cosine'"), std::string::npos) << wsd.output;
}

// eval_at_start=False (the CPU speedrun's recipe): no sampled train/val evaluation at iteration 0,
// the one at the end is kept, and the run trains the same model bit for bit.
TEST_F(TimeToTargetE2e, EvalAtStartFalseSkipsOnlyTheFirstSampledEvaluation) {
  const std::string keys = std::string("train ") + kTinyKeys +
                           " --target_loss=0 --max_iters=12 --always_save_checkpoint=True";
  RunResult with = run_nanogpt(dir_, keys + " --out_dir=with");
  RunResult without = run_nanogpt(dir_, keys + " --eval_at_start=False --out_dir=without");
  ASSERT_EQ(with.exit_code, 0) << with.output;
  ASSERT_EQ(without.exit_code, 0) << without.output;
  EXPECT_NE(with.output.find("step 0: train loss"), std::string::npos) << with.output;
  EXPECT_EQ(without.output.find("step 0: train loss"), std::string::npos) << without.output;
  EXPECT_NE(without.output.find("step 12: train loss"), std::string::npos) << without.output;
  auto evals = [](const std::vector<nlohmann::json>& records) {
    std::vector<int64_t> iters;
    for (const auto& r : records) {
      if (r.contains("val_loss")) iters.push_back(r["iter"].get<int64_t>());
    }
    return iters;
  };
  EXPECT_EQ(evals(read_jsonl(dir_ + "/with/metrics.jsonl")), (std::vector<int64_t>{0, 12}));
  EXPECT_EQ(evals(read_jsonl(dir_ + "/without/metrics.jsonl")), (std::vector<int64_t>{12}));
  EXPECT_EQ(read_file_bytes(dir_ + "/with/ckpt/model.safetensors"),
            read_file_bytes(dir_ + "/without/ckpt/model.safetensors"));
}

}  // namespace
}  // namespace nanogpt::e2e
