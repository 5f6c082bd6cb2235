// TimeToTarget's bookkeeping (when evaluations are due, the first reach, records, the summary
// line, what a resumed run takes back from metrics.jsonl) and the validation of its keys.
#include "train/time_to_target.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/check.h"
#include "train/train_config.h"

namespace nanogpt {
namespace {

TEST(TimeToTarget, DueEveryIntervalAndAtTheLastIteration) {
  const TimeToTarget off;
  EXPECT_FALSE(off.enabled());
  EXPECT_FALSE(off.due(0, 10));
  const TimeToTarget t(1.5, 4, 100);
  EXPECT_TRUE(t.due(0, 10));
  EXPECT_FALSE(t.due(3, 10));
  EXPECT_TRUE(t.due(8, 10));
  EXPECT_FALSE(t.due(9, 10));
  EXPECT_TRUE(t.due(10, 10));  // the last iteration, off the interval
  // From eval_from on, every interval counted from it (6, 10, 14, ...: not the multiples of 4).
  const TimeToTarget late(1.5, 4, 100, /*eval_from=*/6);
  EXPECT_FALSE(late.due(0, 10));
  EXPECT_FALSE(late.due(4, 10));
  EXPECT_TRUE(late.due(6, 20));
  EXPECT_FALSE(late.due(8, 20));
  EXPECT_TRUE(late.due(10, 20));
  EXPECT_TRUE(late.due(14, 20));
  EXPECT_TRUE(late.due(10, 10));
  EXPECT_TRUE(TimeToTarget(1.5, 4, 100, 50).due(10, 10));  // the last one even before eval_from
}

TEST(TimeToTarget, TheFirstEvaluationAtOrBelowTheTargetIsTheResult) {
  TimeToTarget t(1.5, 10, 256);
  auto r0 = t.record(0, 4.0, 0.5, 0.5);
  EXPECT_EQ(r0["iter"], 0);
  EXPECT_EQ(r0["full_val_loss"], 4.0);
  EXPECT_FALSE(r0.contains("target_reached"));
  t.record(10, 2.0, 0.25, 3.0);
  EXPECT_FALSE(t.reached());
  auto r2 = t.record(20, 1.5, 0.25, 6.0);  // equal counts as reached
  EXPECT_TRUE(t.reached());
  EXPECT_EQ(r2["target_reached"], true);
  EXPECT_EQ(r2["tokens"], 20 * 256);
  EXPECT_EQ(r2["eval_total_s"], 1.0);
  t.record(30, 1.2, 0.25, 9.0);  // later, lower: the result stays the first reach
  auto final = t.final_record(30);
  EXPECT_EQ(final["target_loss"], 1.5);
  EXPECT_EQ(final["reached"], true);
  EXPECT_EQ(final["target_iter"], 20);
  EXPECT_EQ(final["tokens"], 5120);
  EXPECT_EQ(final["wall_s"], 6.0);
  EXPECT_EQ(final["eval_s"], 1.0);  // the evaluations up to and including the reaching one
  EXPECT_EQ(final["best_full_val_loss"], 1.2);
  EXPECT_EQ(final["evaluations"], 4);
  EXPECT_EQ(final["iter"], 30);  // where the run ended: resume's rewind drops it
  EXPECT_EQ(t.summary_line(),
            "target val loss 1.5 reached at iter 20: 6.0 s wall (of which 1.0 s full evaluation), "
            "5.1K tokens");
}

TEST(TimeToTarget, NotReachedSaysTheBest) {
  TimeToTarget t(1.0, 10, 1000);
  EXPECT_EQ(t.summary_line(), "target val loss 1 not reached (no full evaluation ran)");
  t.record(0, 3.0, 0.1, 0.1);
  t.record(10, 1.9312, 0.1, 1.0);
  EXPECT_EQ(t.summary_line(), "target val loss 1 not reached (best 1.9312 in 2 full evaluations)");
  auto final = t.final_record(30);
  EXPECT_EQ(final["reached"], false);
  EXPECT_FALSE(final.contains("wall_s"));
}

TEST(TimeToTarget, AResumedRunTakesBackTheKeptRecords) {
  // (Named per process: CTest runs this test under CPU caps too, beside the uncapped one.)
  const auto path = (std::filesystem::temp_directory_path() /
                     ("nanogpt_time_to_target_test_" + std::to_string(::getpid()) + ".jsonl"))
                        .string();
  {
    std::ofstream out(path);
    out << R"({"iter":0,"train_loss":4.1,"val_loss":4.0,"elapsed_s":0.2})" << "\n";
    out << R"({"iter":0,"full_val_loss":4.0,"eval_s":0.5,"eval_total_s":0.5,"tokens":0,"elapsed_s":0.7})"
        << "\n";
    out << R"({"iter":10,"full_val_loss":1.4,"eval_s":0.5,"eval_total_s":1.0,"tokens":100,"elapsed_s":5.0})"
        << "\n";
    out << R"({"iter":20,"full_val_lo)";  // a torn last line
  }
  TimeToTarget t(1.5, 10, 10);
  t.restore_from_metrics(path);
  EXPECT_TRUE(t.reached());
  EXPECT_EQ(t.reached_iter(), 10);
  auto final = t.final_record(30);
  EXPECT_EQ(final["wall_s"], 5.0);
  EXPECT_EQ(final["eval_s"], 1.0);
  // Later evaluations add to the evaluation time but keep the first reach.
  auto rec = t.record(20, 1.3, 0.5, 8.0);
  EXPECT_EQ(rec["eval_total_s"], 1.5);
  EXPECT_EQ(t.final_record(30)["target_iter"], 10);
  // Against a stricter target the same records reach nothing.
  TimeToTarget strict(1.0, 10, 10);
  strict.restore_from_metrics(path);
  EXPECT_FALSE(strict.reached());
  EXPECT_DOUBLE_EQ(strict.best_loss(), 1.4);
  std::filesystem::remove(path);
}

TEST(TimeToTarget, TokenCounts) {
  EXPECT_EQ(format_token_count(999), "999");
  EXPECT_EQ(format_token_count(1234567), "1.2M");
  EXPECT_EQ(format_token_count(2500000000), "2.50B");
}

void expect_invalid(const TrainConfig& c, const std::string& needle) {
  try {
    c.validate();
    FAIL() << "expected an error mentioning " << needle;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(TimeToTargetKeys, AreValidatedWithTheKeyNamed) {
  TrainConfig ok;
  ok.target_loss = 1.5;
  ok.target_eval_interval = 50;
  ok.stop_at_target = true;
  EXPECT_NO_THROW(ok.validate());
  TrainConfig c = ok;
  c.target_loss = -1;
  expect_invalid(c, "target_loss = -1: expected a finite loss >= 0");
  c.target_loss = std::nan("");
  expect_invalid(c, "target_loss = nan");
  c = ok;
  c.target_eval_interval = 0;
  expect_invalid(c, "target_eval_interval = 0: expected >= 1");
  c.target_loss = 0;  // off: the interval is not looked at
  c.stop_at_target = false;
  EXPECT_NO_THROW(c.validate());
  c = ok;
  c.target_loss = 0;
  expect_invalid(c, "stop_at_target = True with target_loss = 0");
}

}  // namespace
}  // namespace nanogpt
