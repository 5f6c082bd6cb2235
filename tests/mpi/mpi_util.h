// Helpers for the data-parallel tests: run `nanogpt` under `mpirun` (as root too, as in CI) in a
// scratch directory, and read the loss sequence a run wrote into metrics.jsonl.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../e2e/e2e_util.h"

namespace nanogpt::mpi_test {

using e2e::RunResult;

// The README's launcher line: root is allowed, more ranks than cores are allowed.
inline std::string mpirun(int ranks) {
  return "mpirun --allow-run-as-root --oversubscribe --bind-to none -np " + std::to_string(ranks);
}

inline std::string binary() { return std::string("'") + NANOGPT_BINARY + "'"; }

// `nanogpt <args>` with one thread (the thread count changes GEMM summation order; ranks use one).
inline RunResult run_single(const std::string& dir, const std::string& args) {
  return e2e::run_command(dir, "OMP_NUM_THREADS=1 " + binary() + " " + args);
}

inline RunResult run_ranks(const std::string& dir, int ranks, const std::string& args) {
  return e2e::run_command(dir, "OMP_NUM_THREADS=1 " + mpirun(ranks) + " " + binary() + " " + args);
}

// A scratch directory with the char-level Shakespeare dataset prepared in data/sc.
inline std::string prepared_dir(const std::string& name) {
  std::string dir = e2e::scratch_dir("mpi_" + name);
  RunResult p = e2e::run_command(dir, binary() + " prepare --tokenizer=char --input=" +
                                          e2e::shakespeare_path() + " --out_dir=data/sc");
  EXPECT_EQ(p.exit_code, 0) << p.output;
  return dir;
}

// The training loss of every logged iteration, in order.
inline std::vector<double> losses(const std::string& metrics_path) {
  std::vector<double> out;
  for (const auto& rec : e2e::read_jsonl(metrics_path)) {
    if (rec.contains("loss")) out.push_back(rec["loss"].get<double>());
  }
  return out;
}

// A tiny model that learns visibly in a few steps (no warmup, lr 1e-2, dropout on).
inline std::string tiny_keys(const std::string& out_dir) {
  return "--dataset=sc --batch_size=2 --gradient_accumulation_steps=4 --block_size=32 "
         "--n_layer=2 --n_head=2 --n_embd=32 --dropout=0.1 --learning_rate=1e-2 --warmup_iters=0 "
         "--lr_decay_iters=20 --min_lr=1e-3 --eval_interval=4 --eval_iters=2 --log_interval=1 "
         "--out_dir=" +
         out_dir;
}

// fp32 tolerance of a loss when the gradient sum runs in another order: W ranks sum their own
// micro-batches and then add across ranks, so each gradient element differs by a few ulp
// (~1e-7 relative); through 8 AdamW steps at lr 1e-2 this moved the loss by < 1e-7 (measured),
// while one different micro-batch moves it by more than 1e-2.
inline constexpr double kReductionOrderTolerance = 1e-5;

inline void expect_same_losses(const std::vector<double>& a, const std::vector<double>& b,
                               const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  ASSERT_FALSE(a.empty()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_NEAR(a[i], b[i], kReductionOrderTolerance) << what << ", iteration " << i;
  }
}

// `train <keys>` on 1 rank, on 2 ranks and on 2 ranks with ZeRO-1 (out_dirs <tag>1, <tag>2,
// <tag>z under dir): the same losses within the reduction-order tolerance, and a run that learns.
inline void expect_one_two_and_zero_one_ranks_agree(const std::string& dir, const std::string& keys,
                                                    const std::string& tag) {
  RunResult one = run_single(dir, "train " + keys + " --out_dir=" + tag + "1");
  ASSERT_EQ(one.exit_code, 0) << one.output;
  RunResult two = run_ranks(dir, 2, "train " + keys + " --out_dir=" + tag + "2");
  ASSERT_EQ(two.exit_code, 0) << two.output;
  RunResult zero = run_ranks(dir, 2, "train " + keys + " --zero_stage=1 --out_dir=" + tag + "z");
  ASSERT_EQ(zero.exit_code, 0) << zero.output;
  const auto l1 = losses(dir + "/" + tag + "1/metrics.jsonl");
  expect_same_losses(l1, losses(dir + "/" + tag + "2/metrics.jsonl"), tag + ", 1 rank vs 2 ranks");
  expect_same_losses(l1, losses(dir + "/" + tag + "z/metrics.jsonl"), tag + ", 1 rank vs ZeRO-1");
  ASSERT_FALSE(l1.empty());
  EXPECT_LT(l1.back(), l1.front() - 0.1) << "the run should learn, else equality proves little";
}

}  // namespace nanogpt::mpi_test
