// `nanogpt autotune` on a tiny model: every split of the step's sequences is listed, a split over
// the memory cap (by the estimator) is not run, the best is one that ran and is marked, and the
// config it writes trains with the same tokens per step.
#include <gtest/gtest.h>

#include <regex>

#include "core/config.h"
#include "experiments/autotune.h"
#include "experiments/estimate.h"
#include "experiments_test_util.h"

namespace nanogpt {
namespace {

using namespace experiments_test;

const char* kModel =
    "--n_layer=2 --n_head=2 --n_embd=32 --block_size=32 --dropout=0.0 --eval_iters=1";

TEST(Autotune, PicksAValidSplitUnderTheCapAndWritesAConfigThatTrains) {
  const std::string dir = scratch_dir("autotune");
  write_dataset(dir + "/data");
  // 8 sequences per step: splits 8x1, 4x2, 2x4, 1x8. A cap between the estimates of micro-batch
  // 4 and 8 leaves 8x1 out.
  auto estimate_for = [&](int64_t b) {
    TrainConfig c;
    apply_assignments(c, parse_command_line({"--data_dir=" + dir + "/data", "--n_layer=2",
                                             "--n_head=2", "--n_embd=32", "--block_size=32",
                                             "--batch_size=" + std::to_string(b)}));
    return estimate_training(resolve_for_estimate(c)).peak_bytes;
  };
  const int64_t cap = (estimate_for(4) + estimate_for(8)) / 2;
  RunResult r = run_nanogpt(dir, std::string("autotune --data_dir=data ") + kModel +
                                     " --tokens_per_step=256 --max_memory=" + std::to_string(cap) +
                                     " --timed_steps=2 --write_config=best.py");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("over the memory cap"), std::string::npos) << r.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m,
                                std::regex("best \\(\\*\\): --batch_size=(\\d+) "
                                           "--gradient_accumulation_steps=(\\d+)")))
      << r.output;
  const int b = std::stoi(m[1]), a = std::stoi(m[2]);
  EXPECT_EQ(b * a, 8);
  EXPECT_LT(b, 8);  // 8x1 was over the cap
  // exactly one row is marked, and it is the best split's row
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '*'), 2) << r.output;  // row + legend
  EXPECT_TRUE(std::regex_search(r.output, std::regex("\\* +" + std::to_string(b) + " +" +
                                                     std::to_string(a) + " ")))
      << r.output;

  const std::string written = read_text(dir + "/best.py");
  EXPECT_NE(written.find("batch_size = " + std::to_string(b) + "\n"), std::string::npos);
  EXPECT_NE(written.find("gradient_accumulation_steps = " + std::to_string(a) + "\n"),
            std::string::npos);
  RunResult t = run_nanogpt(dir, "train best.py --max_iters=2 --out_dir=out-best");
  ASSERT_EQ(t.exit_code, 0) << t.output;
  EXPECT_NE(t.output.find("256 tokens per iteration"), std::string::npos) << t.output;
}

TEST(Autotune, RejectsAStepSizeThatIsNotWholeSequences) {
  const std::string dir = scratch_dir("autotune_bad");
  write_dataset(dir + "/data");
  RunResult r = run_nanogpt(dir, std::string("autotune --data_dir=data ") + kModel +
                                     " --tokens_per_step=100");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("multiple of block_size"), std::string::npos) << r.output;
  RunResult cap = run_nanogpt(dir, std::string("autotune --data_dir=data ") + kModel +
                                       " --tokens_per_step=64 --max_memory=lots");
  EXPECT_EQ(cap.exit_code, 1);
  EXPECT_NE(cap.output.find("max_memory = 'lots'"), std::string::npos) << cap.output;
}

TEST(Autotune, ParsesMemorySizes) {
  EXPECT_EQ(parse_memory_size("2GiB", "k"), int64_t{2} << 30);
  EXPECT_EQ(parse_memory_size("512MiB", "k"), int64_t{512} << 20);
  EXPECT_EQ(parse_memory_size("1.5g", "k"), int64_t{3} << 29);
  EXPECT_EQ(parse_memory_size("1000", "k"), 1000);
  EXPECT_THROW(parse_memory_size("GiB", "k"), Error);
  EXPECT_THROW(parse_memory_size("5 parsecs", "k"), Error);
}

}  // namespace
}  // namespace nanogpt
