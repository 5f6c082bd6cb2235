// Per-rank memory of data-parallel runs: rank 0's tracked peak (metrics.jsonl) matches
// `nanogpt estimate --world_size=2` within 10% (the estimator's tolerance against the trainer),
// and ZeRO-1 on 2 ranks holds less than plain data-parallel by about half the optimizer state. In
// bfloat16, ZeRO-1 shards the float32 master weights too: rank 0's peak equals the estimate, and
// it holds less than plain bfloat16 data-parallel by the sharded masters and optimizer state.
// Every rank's peak is in metrics.jsonl (rank_peak_mem_bytes) and in the log line.
#include <gtest/gtest.h>

#include <vector>

#include "distributed/zero1.h"
#include "experiments/estimate.h"
#include "model/params.h"
#include "mpi_util.h"

namespace nanogpt::mpi_test {
namespace {

// The last record's per-rank tracked peaks.
std::vector<int64_t> last_rank_peaks(const std::string& metrics) {
  std::vector<int64_t> peaks;
  for (const auto& rec : e2e::read_jsonl(metrics)) {
    if (rec.contains("rank_peak_mem_bytes"))
      peaks = rec["rank_peak_mem_bytes"].get<std::vector<int64_t>>();
  }
  return peaks;
}

int64_t last_peak(const std::string& metrics) {
  int64_t peak = -1;
  for (const auto& rec : e2e::read_jsonl(metrics)) {
    if (rec.contains("peak_mem_bytes")) peak = rec["peak_mem_bytes"].get<int64_t>();
  }
  return peak;
}

// The model and batch of both memory tests, as the estimator takes them (the same shape as their
// command lines).
TrainConfig memory_test_config() {
  TrainConfig c;
  c.model.n_layer = 2;
  c.model.n_head = 4;
  c.model.n_embd = 128;
  c.model.block_size = 32;
  c.model.vocab_size = 65;  // the char dataset's
  c.batch_size = 2;
  c.gradient_accumulation_steps = 2;
  return c;
}

// Trains `shape` on 2 ranks twice, into plain/ and (with ZeRO-1) zero/ under dir; both must succeed.
// The plain run's result goes to *plain_out when given.
void train_plain_and_zero_one(const std::string& dir, const std::string& shape,
                              RunResult* plain_out = nullptr) {
  RunResult plain = run_ranks(dir, 2, "train --out_dir=plain" + shape);
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  if (plain_out) *plain_out = plain;
  RunResult zero = run_ranks(dir, 2, "train --out_dir=zero --zero_stage=1" + shape);
  ASSERT_EQ(zero.exit_code, 0) << zero.output;
}

TEST(DataParallelMemory, RankPeakMatchesTheEstimateAndZeroOneSaves) {
  std::string dir = prepared_dir("memory");
  // A wider model, so parameters and optimizer state dominate the peak.
  const std::string shape =
      " --n_layer=2 --n_head=4 --n_embd=128 --block_size=32 --batch_size=2 "
      "--gradient_accumulation_steps=2 --max_iters=2 --eval_iters=1 --eval_interval=100 "
      "--dataset=sc";
  RunResult plain;
  ASSERT_NO_FATAL_FAILURE(train_plain_and_zero_one(dir, shape, &plain));
  const int64_t plain_peak = last_peak(dir + "/plain/metrics.jsonl");
  const int64_t zero_peak = last_peak(dir + "/zero/metrics.jsonl");

  TrainConfig c = memory_test_config();
  const int64_t plain_estimate = estimate_training(c, 2).peak_bytes;
  c.zero_stage = 1;
  const int64_t zero_estimate = estimate_training(c, 2).peak_bytes;
  // Rank 0's peak is the first of the per-rank peaks; rank 1 holds the same buffers (plain) or a
  // shard of about the same size (ZeRO-1), so both are within the estimator's tolerance.
  const std::vector<int64_t> plain_ranks = last_rank_peaks(dir + "/plain/metrics.jsonl");
  const std::vector<int64_t> zero_ranks = last_rank_peaks(dir + "/zero/metrics.jsonl");
  ASSERT_EQ(plain_ranks.size(), 2u);
  ASSERT_EQ(zero_ranks.size(), 2u);
  EXPECT_EQ(plain_ranks[0], plain_peak);
  EXPECT_EQ(zero_ranks[0], zero_peak);
  EXPECT_NE(plain.output.find("mem r0 "), std::string::npos) << plain.output;
  EXPECT_NE(plain.output.find(", r1 "), std::string::npos) << plain.output;
  for (auto [measured, estimated, what] :
       {std::tuple{plain_ranks[1], plain_estimate, "plain rank 1"},
        std::tuple{zero_ranks[1], zero_estimate, "ZeRO-1 rank 1"}}) {
    const double ratio = static_cast<double>(measured) / static_cast<double>(estimated);
    EXPECT_GT(ratio, 0.9) << what << ": measured " << measured << " estimated " << estimated;
    EXPECT_LT(ratio, 1.1) << what << ": measured " << measured << " estimated " << estimated;
  }
  for (auto [measured, estimated, what] : {std::tuple{plain_peak, plain_estimate, "plain"},
                                           std::tuple{zero_peak, zero_estimate, "ZeRO-1"}}) {
    const double ratio = static_cast<double>(measured) / static_cast<double>(estimated);
    EXPECT_GT(ratio, 0.9) << what << ": measured " << measured << " estimated " << estimated;
    EXPECT_LT(ratio, 1.1) << what << ": measured " << measured << " estimated " << estimated;
  }
  // AdamW's moments are 8 bytes per parameter; ZeRO-1 on 2 ranks keeps half of them (4) and adds
  // the reduced-gradient shard (2): it saves 2 bytes per parameter.
  const ParamTable table(c.model);
  const double saved = 2.0 * static_cast<double>(table.total_numel());
  EXPECT_NEAR(static_cast<double>(plain_peak - zero_peak), saved, 0.1 * saved)
      << "plain " << plain_peak << " vs ZeRO-1 " << zero_peak;
}

TEST(DataParallelMemory, ZeroOneInBfloat16ShardsTheMasterWeights) {
  std::string dir = prepared_dir("memory_bf16");
  const std::string shape =
      " --n_layer=2 --n_head=4 --n_embd=128 --block_size=32 --batch_size=2 "
      "--gradient_accumulation_steps=2 --max_iters=2 --eval_iters=1 --eval_interval=100 "
      "--dataset=sc --dtype=bfloat16";
  ASSERT_NO_FATAL_FAILURE(train_plain_and_zero_one(dir, shape));
  const std::vector<int64_t> plain_ranks = last_rank_peaks(dir + "/plain/metrics.jsonl");
  const std::vector<int64_t> zero_ranks = last_rank_peaks(dir + "/zero/metrics.jsonl");
  ASSERT_EQ(plain_ranks.size(), 2u);
  ASSERT_EQ(zero_ranks.size(), 2u);

  TrainConfig c = memory_test_config();
  c.dtype = "bfloat16";
  const int64_t plain_estimate = estimate_training(c, 2).peak_bytes;
  c.zero_stage = 1;
  const int64_t zero_estimate = estimate_training(c, 2).peak_bytes;
  // Rank 0 holds the largest shard, the one the estimate sizes; rank 1's is not larger.
  EXPECT_EQ(plain_ranks[0], plain_estimate);
  EXPECT_EQ(plain_ranks[1], plain_estimate);
  EXPECT_EQ(zero_ranks[0], zero_estimate);
  EXPECT_LE(zero_ranks[1], zero_estimate);

  // Per rank, ZeRO-1 drops the whole float32 masters for its shard of them plus the float32
  // copies of the tensors the kernels read in float32, and AdamW's two moments for their shards
  // (adding the reduced-gradient shard).
  const ParamTable table(c.model);
  auto bytes = [](int64_t floats) { return (floats * 4 + 63) / 64 * 64; };
  const int64_t whole = bytes(table.total_numel());
  const int64_t shard = bytes(zero1_shard_counts(table.total_numel(), 2).front());
  const int64_t masters_saved = whole - shard - bytes(table.fp32_read_numel());
  EXPECT_GT(masters_saved, whole / 3) << "most weights are matmul weights, read in 16 bits";
  const int64_t state_saved = 2 * (whole - shard) - shard;
  EXPECT_EQ(plain_ranks[0] - zero_ranks[0], masters_saved + state_saved)
      << "plain " << plain_ranks[0] << " vs ZeRO-1 " << zero_ranks[0];

  // Resuming reads each rank's shard of the masters and the optimizer state from the checkpoint
  // (nothing whole is held): the resumed run's tracked peaks are the run's own.
  RunResult resumed = run_ranks(
      dir, 2, "train --out_dir=zero --zero_stage=1 --init_from=resume" + shape + " --max_iters=4");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("resumed from"), std::string::npos) << resumed.output;
  EXPECT_EQ(last_rank_peaks(dir + "/zero/metrics.jsonl"), zero_ranks);
}

}  // namespace
}  // namespace nanogpt::mpi_test
