// bench/speedrun_table.py (docs/speedrun.md from a speedrun bench's runs): runs cut off before
// their end (a bench's time limit, killed or stopped by a signal) are counted as not reached and
// named as cut off rather than dropped or taken for failures; a record of another machine at the
// same commit stays in the table, one of the same machine is replaced; the machine cell carries the
// bf16 matmul's peak; our recipe's runs of an earlier, shorter schedule are not labelled as stopped
// early against today's config (only nanoGPT's baby-track runs are).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "experiments_test_util.h"

namespace nanogpt {
namespace {

namespace fs = std::filesystem;
using namespace experiments_test;

constexpr const char* kCompute =
    "compute: 2 threads on Test CPU, kernels for avx512_spr [Highway AVX3_DL]; measured peak 312 "
    "GFLOP/s fp32 FMA, 155 GFLOP/s bf16 dot products, 526 GFLOP/s bfloat16 matmul (oneDNN); MFU "
    "is relative to the bfloat16 matmul (oneDNN) peak 526 GFLOP/s";

// One run folder of the baby track's sweep: its train.log (config and compute line) and
// metrics.jsonl lines.
void write_run(const std::string& sweep_dir, int seed, const std::string& metrics) {
  const std::string dir = sweep_dir + "/runs/ours.default.s" + std::to_string(seed);
  fs::create_directories(dir);
  std::ofstream(dir + "/train.log") << "max_iters = 1000\n" << kCompute << "\n";
  std::ofstream(dir + "/metrics.jsonl") << metrics;
}

std::string full_val(int iter, double loss, double elapsed) {
  return "{\"iter\":" + std::to_string(iter) + ",\"full_val_loss\":" + std::to_string(loss) +
         ",\"eval_s\":2.0,\"elapsed_s\":" + std::to_string(elapsed) + "}\n";
}

TEST(SpeedrunTable, CutOffRunsCountAsNotReachedAndOtherMachinesRowsStay) {
  const std::string root = scratch_dir("speedrun_table");
  const std::string out = root + "/out", sweep = out + "/baby-ours";
  // reached at 775
  write_run(sweep, 1337,
            full_val(775, 1.4661, 479.0) +
                "{\"iter\":775,\"target_loss\":1.47,\"reached\":true,\"target_iter\":775,"
                "\"tokens\":6348800,\"wall_s\":479.5,\"eval_s\":8.0,\"best_full_val_loss\":1.4661,"
                "\"evaluations\":3}\n");
  // killed after its evaluation at 800: no target record at all
  write_run(sweep, 1338, full_val(775, 1.4737, 480.0) + full_val(800, 1.4739, 494.0));
  // stopped by SIGTERM at 132, before any whole-split evaluation: a record that did not reach
  write_run(sweep, 1339,
            "{\"iter\":132,\"target_loss\":1.47,\"reached\":false,\"best_full_val_loss\":null,"
            "\"evaluations\":0}\n");
  // an earlier doc with a row of another machine at the same commit, and one of this machine
  const std::string other =
      "| 2026-11-27 | abcdef123456 | baby GPT, char tinyshakespeare | ≤ 1.47 | ours "
      "(`config/speedrun_shakespeare_char.py`) | 3/3 | 4.1 min | ≤ 5 min: met | 6.42M | 3.6 s | "
      "783 | 1.4666 | Other CPU, 2 threads, avx512_bf16; peaks 545 / 994 GFLOP/s fp32 / bf16 | — |";
  // this machine's row of the same commit from before, its machine cell without the matmul peak:
  // regenerated, not kept beside the new one
  const std::string same =
      "| 2026-11-27 | abcdef123456 | baby GPT, char tinyshakespeare | ≤ 1.47 | ours "
      "(`config/speedrun_shakespeare_char.py`) | 9/9 | 4.1 min | ≤ 5 min: met | 6.42M | 3.6 s | "
      "783 | 1.4666 | Test CPU, 2 threads, avx512_spr; peaks 312 / 155 GFLOP/s fp32 / bf16 | — |";
  const std::string doc = root + "/speedrun.md";
  std::ofstream(doc) << "# The CPU speedrun\n\n## Records\n\n| date | commit |\n|---|---|\n"
                     << other << "\n"
                     << same << "\n";

  // today's recipe runs 1100 iterations, the runs above 1000 (an earlier commit's recipe)
  fs::create_directories(root + "/config");
  std::ofstream(root + "/config/speedrun_shakespeare_char.py") << "max_iters = 1100\n";

  RunResult r = run_command(root, "python3 '" NANOGPT_SOURCE_DIR "/bench/speedrun_table.py' '" +
                                      out + "' '" + doc +
                                      "' 'nanogpt 0.4.0 (git abcdef123456)' 'the test'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string text = read_text(doc);
  EXPECT_NE(text.find("| 1/3 (2 cut off by the bench's time limit, at iters 132, 800, not yet at "
                      "the target) | 8.0 min | ≤ 5 min: missed |"),
            std::string::npos)
      << text;
  // the best whole-split loss: the reached run's and the killed run's best evaluation (1.4737)
  // over the two; the stopped run had none
  EXPECT_NE(text.find("| 775 | 1.4699 ± 0.0054 | Test CPU, 2 threads, avx512_spr; peaks 312 / 155 / "
                      "526 GFLOP/s fp32 / bf16 dot products / bf16 matmul (oneDNN) |"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("| ours (`config/speedrun_shakespeare_char.py`) | 1/3 "), std::string::npos)
      << "our recipe's row labelled against today's schedule:\n"
      << text;
  EXPECT_NE(text.find(other), std::string::npos) << "the other machine's row was dropped:\n"
                                                  << text;
  EXPECT_EQ(text.find("| 9/9 |"), std::string::npos) << "this machine's old row stayed:\n" << text;
}

}  // namespace
}  // namespace nanogpt
