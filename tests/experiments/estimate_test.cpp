// The estimator against the trainer: for several configs (sizes, dropout, optimizers, batch,
// accumulation) the tracked peak a real training run measures must be within 10% of the estimate
// (it is built from the same allocation functions, so in practice they agree exactly), and the
// FLOP counts must agree with hand-computed values.
#include <gtest/gtest.h>

#include "core/config.h"
#include "experiments/estimate.h"
#include "experiments_test_util.h"
#include "optim/optimizer.h"
#include "train/trainer.h"

namespace nanogpt {
namespace {

using experiments_test::scratch_dir;
using experiments_test::write_dataset;

struct Case {
  const char* name;
  std::vector<std::string> overrides;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class EstimateVsTrainer : public ::testing::TestWithParam<Case> {};

TEST_P(EstimateVsTrainer, TrackedPeakWithinTenPercent) {
  const std::string dir = scratch_dir(std::string("estimate_") + GetParam().name);
  write_dataset(dir + "/data");
  std::vector<std::string> args = {"--data_dir=" + dir + "/data", "--out_dir=" + dir + "/out",
                                   "--max_iters=2", "--eval_interval=100", "--eval_iters=1",
                                   "--log_interval=1", "--always_save_checkpoint=False",
                                   "--n_layer=2", "--n_head=2", "--n_embd=32", "--block_size=32",
                                   "--batch_size=4", "--gradient_accumulation_steps=1"};
  for (const auto& o : GetParam().overrides) args.push_back(o);
  TrainConfig config;
  apply_assignments(config, parse_command_line(args));

  const TrainingEstimate estimate = estimate_training(resolve_for_estimate(config));
  TrainOptions quiet;
  quiet.quiet = true;
  const TrainResult result = run_training(config, quiet);

  const double ratio = static_cast<double>(result.peak_tracked_bytes) /
                       static_cast<double>(estimate.peak_bytes);
  RecordProperty("measured_over_estimate", std::to_string(ratio));
  EXPECT_GT(ratio, 0.9) << "measured " << result.peak_tracked_bytes << " estimated "
                        << estimate.peak_bytes;
  EXPECT_LT(ratio, 1.1) << "measured " << result.peak_tracked_bytes << " estimated "
                        << estimate.peak_bytes;
  // Process RSS includes what is not tracked (binary, libraries, token files): never below.
  EXPECT_GE(result.peak_rss_bytes, result.peak_tracked_bytes);
}

INSTANTIATE_TEST_SUITE_P(
    Configs, EstimateVsTrainer,
    ::testing::Values(
        Case{"tiny_adamw", {}},
        Case{"dropout_accumulation", {"--dropout=0.1", "--gradient_accumulation_steps=3"}},
        Case{"sgd_momentum_wide", {"--optimizer=sgd", "--n_embd=64", "--n_head=4"}},
        Case{"sgd_plain_deep", {"--optimizer=sgd", "--momentum=0.0", "--n_layer=4"}},
        Case{"batch_context", {"--batch_size=8", "--block_size=64", "--bias=True"}},
        Case{"big_vocab", {"--vocab_size=5000", "--batch_size=2"}},
        Case{"zero1_one_rank", {"--zero_stage=1", "--n_embd=48", "--n_head=3"}},
        Case{"naive_attention", {"--attention=naive", "--block_size=64"}},
        Case{"unfused_big_vocab", {"--fused=False", "--vocab_size=3000"}},
        Case{"checkpointing_deep",
             {"--activation_checkpointing=True", "--n_layer=4", "--dropout=0.1"}},
        Case{"checkpointing_bf16", {"--activation_checkpointing=True", "--dtype=bfloat16"}},
        Case{"muon", {"--optimizer=muon", "--gradient_accumulation_steps=2"}},
        Case{"keep_norms_and_gelu_bf16", {"--recompute=0", "--dtype=bfloat16"}},
        Case{"keep_norms_deep", {"--recompute=1", "--n_layer=4"}},
        Case{"muon_bf16", {"--optimizer=muon", "--dtype=bfloat16"}},
        Case{"muon_zero1_one_rank", {"--optimizer=muon", "--zero_stage=1"}}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

// 2 layers, 2 heads, 32 wide, context 16, vocab 64.
TrainConfig tiny_config() {
  TrainConfig config;
  config.model.n_layer = 2;
  config.model.n_head = 2;
  config.model.n_embd = 32;
  config.model.block_size = 16;
  config.model.vocab_size = 64;
  return config;
}

TEST(Estimate, BreakdownSumsToPeakAndNamesEachPart) {
  TrainConfig config = tiny_config();
  config.batch_size = 3;
  const TrainingEstimate e = estimate_training(config);
  int64_t sum = 0;
  bool has_weights = false, has_optimizer = false, has_classifier = false;
  for (const auto& line : e.memory) {
    sum += line.bytes;
    has_weights |= line.what.find("weights") != std::string::npos;
    has_optimizer |= line.what.find("optimizer") != std::string::npos;
    has_classifier |= line.what.find("classifier") != std::string::npos;
  }
  EXPECT_EQ(sum, e.peak_bytes);
  EXPECT_TRUE(has_weights && has_optimizer && has_classifier);
  EXPECT_EQ(e.tokens_per_iter, 3 * 16 * config.gradient_accumulation_steps);
}

// The printed summary names every choice the peak depends on, the kernel choices included.
TEST(Estimate, SummaryNamesDtypeAttentionAndFusion) {
  TrainConfig config = tiny_config();
  const std::string plain = format_estimate(estimate_training(config), 0);
  EXPECT_NE(plain.find("dtype float32, optimizer adamw, attention flash, fused True,"),
            std::string::npos)
      << plain;
  config.attention = "naive";
  config.fused = false;
  config.dtype = "bfloat16";
  const std::string naive = format_estimate(estimate_training(config), 0);
  EXPECT_NE(naive.find("dtype bfloat16, optimizer adamw, attention naive, fused False,"),
            std::string::npos)
      << naive;
  EXPECT_NE(naive.find("attention probabilities (attention=naive"), std::string::npos) << naive;
}

TEST(Estimate, ZeroOneShardsTheOptimizerStatePerRank) {
  TrainConfig config;
  config.model.n_layer = 2;
  config.model.n_head = 2;
  config.model.n_embd = 64;
  config.model.block_size = 16;
  config.model.vocab_size = 64;
  config.gradient_accumulation_steps = 4;
  auto line = [](const TrainingEstimate& e, const std::string& what) {
    for (const auto& l : e.memory) {
      if (l.what.find(what) != std::string::npos) return l.bytes;
    }
    return int64_t{-1};
  };
  const TrainingEstimate plain = estimate_training(config, 4);
  config.zero_stage = 1;
  const TrainingEstimate zero = estimate_training(config, 4);
  const int64_t numel = ParamTable(config.model).total_numel();
  const int64_t shard = ((numel + 3) / 4 + 15) / 16 * 16;
  EXPECT_EQ(zero.local_accumulation, 1);
  EXPECT_EQ(line(zero, "optimizer state"), 2 * ((shard * 4 + 63) / 64 * 64));
  EXPECT_EQ(line(zero, "gradient shard"), (shard * 4 + 63) / 64 * 64);
  EXPECT_LT(zero.peak_bytes, plain.peak_bytes);
  EXPECT_EQ(line(plain, "weights"), line(zero, "weights"));  // weights stay whole per rank
  EXPECT_THROW(estimate_training(config, 3), Error);         // 3 does not divide 4 micro-batches
}

TEST(Estimate, ExactFlopsMatchHandCount) {
  ModelConfig m;
  m.n_layer = 1;
  m.n_head = 1;
  m.n_embd = 2;
  m.block_size = 2;
  m.vocab_size = 64;  // padded 64
  // forward per sequence: 24*4*2 (matmuls) + 4*2*(2*3/2) (causal pairs) + 2*2*64*2 (classifier)
  const double forward = 192 + 24 + 512;
  EXPECT_DOUBLE_EQ(exact_training_flops(m, 5, 2), 3 * forward * 5);
}

// Muon's Newton-Schulz: per block, on X (C, c) for c = 3C, C, 4C, 4C: 5 x (4 C^2 c + 2 C^3).
TEST(Estimate, MuonAddsItsNewtonSchulzFlops) {
  TrainConfig config = tiny_config();  // C = 32, 2 layers
  EXPECT_EQ(estimate_training(config).flops_per_iter_optimizer, 0.0);
  config.optim.optimizer = "muon";
  const double C = 32;
  auto ns = [&](double c) { return 5 * (4 * C * C * c + 2 * C * C * C); };
  EXPECT_DOUBLE_EQ(estimate_training(config).flops_per_iter_optimizer,
                   2 * (ns(3 * C) + ns(C) + 2 * ns(4 * C)));
  EXPECT_NE(format_estimate(estimate_training(config), 1e11, "fp32")
                .find("(Muon's Newton-Schulz)"),
            std::string::npos);
}

TEST(Estimate, OptimizerStateCountMatchesOptimizers) {
  ModelConfig m;
  m.n_layer = 1;
  m.n_head = 1;
  m.n_embd = 8;
  m.block_size = 4;
  m.vocab_size = 16;
  ParamTable table(m);
  for (auto [opt, momentum] :
       {std::pair{"adamw", 0.9}, {"sgd", 0.9}, {"sgd", 0.0}, {"muon", 0.9}}) {
    OptimConfig oc;
    oc.optimizer = opt;
    oc.momentum = momentum;
    EXPECT_EQ(static_cast<int>(make_optimizer(oc, table)->state_tensors().size()),
              optimizer_state_tensor_count(oc))
        << opt << " momentum " << momentum;
  }
}

TEST(Estimate, RejectsWhatTheTrainerRejects) {
  TrainConfig config;
  config.dtype = "float8";
  EXPECT_THROW(resolve_for_estimate(config), Error);
  config.dtype = "float32";
  config.init_from = "some/weights.safetensors";
  EXPECT_THROW(resolve_for_estimate(config), Error);
}

}  // namespace
}  // namespace nanogpt
