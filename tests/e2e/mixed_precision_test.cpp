// End-to-end mixed precision (--dtype): bfloat16 and float16 training track the float32 loss curve
// on char tinyshakespeare, resume is bit-exact in both (float16's loss scaler included), float16's
// scale and skipped steps reach the log line, metrics.jsonl and state.json, MFU is against the
// highest measured peak of the units each dtype's products may run on (read from the run's own
// compute: line, so the check means the same on every CPU and under every NANOGPT_CPU_TARGET cap),
// a non-finite loss in bfloat16 stops with the last good checkpoint intact, and a bad dtype is a
// named error.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <regex>
#include <sstream>
#include <vector>

#include "e2e_util.h"

namespace nanogpt::e2e {
namespace {

namespace fs = std::filesystem;

// Tiny shapes so that 200 steps take a few seconds.
const char* kSmall =
    "--dataset=sc --batch_size=8 --gradient_accumulation_steps=1 --block_size=32 --n_layer=2 "
    "--n_head=2 --n_embd=48 --learning_rate=3e-3 --warmup_iters=2 --min_lr=3e-4 --eval_iters=2 "
    "--log_interval=1 --always_save_checkpoint=True";

class MixedPrecisionCli : public ShakespeareTest {};

std::map<int64_t, double> train_losses(const std::string& path) {
  std::map<int64_t, double> out;
  for (const auto& j : read_jsonl(path)) {
    if (j.contains("loss")) out[j["iter"].get<int64_t>()] = j["loss"].get<double>();
  }
  return out;
}

// The compute: line's numbers: every measured peak it prints (GFLOP/s by unit: "fp32 FMA",
// "bf16 dot products", "bfloat16 matmul (oneDNN)", ...) and the unit and peak MFU is against.
struct ComputeLine {
  std::map<std::string, double> peaks;
  std::string mfu_unit;
  double mfu_peak = 0;
};

ComputeLine parse_compute_line(const std::string& output) {
  ComputeLine c;
  const size_t at = output.find("\ncompute: ");
  if (at == std::string::npos) {
    ADD_FAILURE() << "no compute: line in\n" << output;
    return c;
  }
  const std::string line = output.substr(at + 1, output.find('\n', at + 1) - at - 1);
  const std::string peaks_from = "measured peak ", mfu_from = "; MFU is relative to the ";
  const size_t p = line.find(peaks_from), m = line.find(mfu_from);
  if (p == std::string::npos || m == std::string::npos || m < p) {
    ADD_FAILURE() << "the compute: line has no peaks or no MFU unit: " << line;
    return c;
  }
  // "484 GFLOP/s fp32 FMA, 240 GFLOP/s bf16 dot products, 1906 GFLOP/s bfloat16 matmul (oneDNN)"
  std::stringstream peaks(line.substr(p + peaks_from.size(), m - p - peaks_from.size()));
  for (std::string item; std::getline(peaks, item, ',');) {
    const size_t unit = item.find(" GFLOP/s ");
    EXPECT_NE(unit, std::string::npos) << "peak '" << item << "' in: " << line;
    if (unit == std::string::npos) continue;
    c.peaks[item.substr(unit + 9)] = std::stod(item.substr(0, unit));
  }
  // "bfloat16 matmul (oneDNN) peak 1906 GFLOP/s (best measured here)"
  const std::string mfu = line.substr(m + mfu_from.size());
  const size_t peak_at = mfu.rfind(" peak ");
  EXPECT_NE(peak_at, std::string::npos) << line;
  if (peak_at == std::string::npos) return c;
  c.mfu_unit = mfu.substr(0, peak_at);
  c.mfu_peak = std::stod(mfu.substr(peak_at + 6));
  return c;
}

// The rule of train/metrics.h (mfu_peak_for): MFU is against the fastest unit the dtype's products
// may run on. Those are, for float32, the fp32 FMAs; for bfloat16, the bf16 dot products where the
// run has them (else the fp32 FMAs its products widen to) and oneDNN's bf16 matmul; for float16,
// the fp32 FMAs and oneDNN's fp16 matmul. Each of those is on the compute: line when measured;
// which one wins depends on the CPU (AMD Zen 5: the dot products; Intel with AMX: oneDNN's matmul
// on the tiles; under an avx2 cap: the FMAs), the rule does not.
void expect_mfu_against_the_highest_peak(const std::string& output, const std::string& dtype) {
  const ComputeLine c = parse_compute_line(output);
  ASSERT_TRUE(c.peaks.count("fp32 FMA")) << output;
  EXPECT_GT(c.peaks.at("fp32 FMA"), 0) << output;
  std::vector<std::string> candidates;
  if (dtype == "float32") {
    candidates = {"fp32 FMA"};
    EXPECT_EQ(c.peaks.size(), 1u) << "a float32 run measures the FMAs only: " << output;
  } else {
    candidates = {dtype == "bfloat16" && c.peaks.count("bf16 dot products") ? "bf16 dot products"
                                                                            : "fp32 FMA",
                  dtype + " matmul (oneDNN)"};
    EXPECT_TRUE(c.peaks.count(dtype + " matmul (oneDNN)")) << output;
  }
  if (dtype != "bfloat16") {
    EXPECT_FALSE(c.peaks.count("bf16 dot products")) << output;
  }
  double highest = 0;
  for (const std::string& unit : candidates) {
    if (c.peaks.count(unit)) highest = std::max(highest, c.peaks.at(unit));
  }
  // (Two units may print the same rounded GFLOP/s: either is then the highest.)
  EXPECT_NE(std::find(candidates.begin(), candidates.end(), c.mfu_unit), candidates.end())
      << "MFU is against '" << c.mfu_unit << "', not a unit of " << dtype
      << "'s products: " << output;
  ASSERT_TRUE(c.peaks.count(c.mfu_unit)) << output;
  EXPECT_EQ(c.peaks.at(c.mfu_unit), highest) << output;
  EXPECT_EQ(c.mfu_peak, highest) << output;
}

// Every dtype's MFU unit by the rule above, in a 2-step run (CTest runs this test under
// NANOGPT_CPU_TARGET caps as well: CMakeLists.txt's capped copies).
TEST_F(MixedPrecisionCli, MfuIsAgainstTheHighestPeakOfTheRunsDtype) {
  for (const char* dtype : {"float32", "bfloat16", "float16"}) {
    RunResult r = run_nanogpt(dir_, std::string("train ") + kSmall +
                                        " --max_iters=2 --lr_decay_iters=2 --eval_interval=1000 "
                                        "--out_dir=mfu_" +
                                        dtype + " --dtype=" + dtype);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    SCOPED_TRACE(dtype);
    expect_mfu_against_the_highest_peak(r.output, dtype);
  }
}

// Same data, same init, same dropout-free steps: the curves differ only by rounding. Compared as
// means over windows of 25 steps (single steps drift further apart: up to 0.08 nats in bfloat16),
// within 0.06 nats for bfloat16 and 0.015 for float16 (its 3 more significant bits); measured
// here: at most 0.024 and 0.003 (loss 4.15 -> 2.70 over the run).
TEST_F(MixedPrecisionCli, Bf16AndFp16TrackTheFloat32LossCurveOver200Steps) {
  std::map<std::string, std::map<int64_t, double>> curves;
  for (const char* dtype : {"float32", "bfloat16", "float16"}) {
    RunResult r = run_nanogpt(dir_, std::string("train ") + kSmall +
                                        " --max_iters=200 --lr_decay_iters=200 --warmup_iters=10 "
                                        "--eval_interval=1000 --out_dir=" + dtype +
                                        " --dtype=" + dtype);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    expect_mfu_against_the_highest_peak(r.output, dtype);
    curves[dtype] = train_losses(dir_ + "/" + dtype + "/metrics.jsonl");
    ASSERT_EQ(curves[dtype].size(), 200u) << dtype;
  }
  const auto& ref = curves["float32"];
  EXPECT_LT(ref.at(199), ref.at(0) - 1.0) << "the float32 run must learn";
  for (auto [dtype, tol] : {std::pair{"bfloat16", 0.06}, std::pair{"float16", 0.015}}) {
    for (int64_t w = 0; w < 200; w += 25) {
      double a = 0, b = 0;
      for (int64_t i = w; i < w + 25; ++i) a += curves[dtype].at(i), b += ref.at(i);
      EXPECT_NEAR(a / 25, b / 25, tol) << dtype << " window at iter " << w;
    }
  }
}

TEST_F(MixedPrecisionCli, ResumeIsBitExactInBf16AndFp16WithDropout) {
  for (const std::string dtype : {"bfloat16", "float16"}) {
    const std::string common =
        std::string(kSmall) + " --dropout=0.1 --eval_interval=5 --dtype=" + dtype;
    RunResult a = run_nanogpt(dir_, "train " + common +
                                        " --max_iters=16 --lr_decay_iters=16 --out_dir=s_" + dtype);
    ASSERT_EQ(a.exit_code, 0) << a.output;
    RunResult b1 = run_nanogpt(dir_, "train " + common +
                                         " --max_iters=10 --lr_decay_iters=16 --out_dir=h_" + dtype);
    ASSERT_EQ(b1.exit_code, 0) << b1.output;
    RunResult b2 = run_nanogpt(dir_, "train " + common +
                                         " --max_iters=16 --lr_decay_iters=16 --init_from=resume "
                                         "--out_dir=h_" + dtype);
    ASSERT_EQ(b2.exit_code, 0) << b2.output;
    const auto straight = timing_free_records(dir_ + "/s_" + dtype + "/metrics.jsonl");
    EXPECT_EQ(straight.size(), 16u + 5u) << dtype;  // evals at 0, 5, 10, 15, 16
    EXPECT_EQ(straight, timing_free_records(dir_ + "/h_" + dtype + "/metrics.jsonl")) << dtype;
  }
}

// The oneDNN attention way through the trainer: forced, it is named on the compute: line, saved
// in the checkpoint and kept on resume, bit-exact against the straight run (with dropout); where
// the CPU (or its cap) has no bf16 dot products, the faster unit's way runs instead and says so.
TEST_F(MixedPrecisionCli, OnednnAttentionWayTrainsAndResumesBitExact) {
  const std::string common = std::string(kSmall) +
                             " --n_embd=64 --dropout=0.1 --eval_interval=4 --dtype=bfloat16 "
                             "--lr_decay_iters=8 --kernel_choice=onednn";
  RunResult s = run_nanogpt(dir_, "train " + common + " --max_iters=8 --out_dir=s");
  ASSERT_EQ(s.exit_code, 0) << s.output;
  const bool onednn =
      s.output.find("-> onednn (forced by kernel_choice = 'onednn')") != std::string::npos;
  const bool fallback =
      s.output.find(
          "(kernel_choice = 'onednn', but this CPU (or its cap) and shape cannot run "
          "it here: ") != std::string::npos;
  ASSERT_TRUE(onednn || fallback) << s.output;
  if (!onednn) GTEST_SKIP() << "no bf16 dot products here: the oneDNN way is not offered";
  const nlohmann::json state =
      nlohmann::json::parse(std::ifstream(dir_ + "/s/ckpt/state.json"), nullptr, false);
  EXPECT_EQ(state["kernel_ways"]["attention_bf16"], "onednn") << state.dump();
  RunResult h1 = run_nanogpt(dir_, "train " + common + " --max_iters=4 --out_dir=h");
  ASSERT_EQ(h1.exit_code, 0) << h1.output;
  RunResult h2 = run_nanogpt(dir_, "train " + std::string(kSmall) +
                                       " --n_embd=64 --dropout=0.1 --eval_interval=4 "
                                       "--dtype=bfloat16 --lr_decay_iters=8 --max_iters=8 "
                                       "--init_from=resume --out_dir=h");  // kernel_choice auto
  ASSERT_EQ(h2.exit_code, 0) << h2.output;
  EXPECT_NE(h2.output.find("-> onednn (kept from the checkpoint)"), std::string::npos) << h2.output;
  EXPECT_EQ(timing_free_records(dir_ + "/s/metrics.jsonl"),
            timing_free_records(dir_ + "/h/metrics.jsonl"));
}

// A float32 run's small products way through the trainer: forced to oneDNN it is named on the
// compute: line, saved in the checkpoint and kept on resume (kernel_choice auto), bit-exact against
// the straight run; left to auto, both ways are timed at the run's shapes.
TEST_F(MixedPrecisionCli, SmallProductsWayIsChosenSavedAndKeptOnResume) {
  const std::string common =
      std::string(kSmall) + " --dropout=0.1 --eval_interval=4 --dtype=float32 --lr_decay_iters=8";
  RunResult s =
      run_nanogpt(dir_, "train " + common + " --kernel_choice=onednn --max_iters=8 --out_dir=s");
  ASSERT_EQ(s.exit_code, 0) << s.output;
  EXPECT_NE(s.output.find("small products f32: tiles not timed, onednn not timed -> onednn "
                          "(forced by kernel_choice = 'onednn')"),
            std::string::npos)
      << s.output;
  const nlohmann::json state =
      nlohmann::json::parse(std::ifstream(dir_ + "/s/ckpt/state.json"), nullptr, false);
  EXPECT_EQ(state["kernel_ways"]["small_products_f32"], "onednn") << state.dump();
  RunResult h1 =
      run_nanogpt(dir_, "train " + common + " --kernel_choice=onednn --max_iters=4 --out_dir=h");
  ASSERT_EQ(h1.exit_code, 0) << h1.output;
  RunResult h2 = run_nanogpt(
      dir_, "train " + common + " --max_iters=8 --init_from=resume --out_dir=h");  // auto
  ASSERT_EQ(h2.exit_code, 0) << h2.output;
  EXPECT_NE(h2.output.find("-> onednn (kept from the checkpoint)"), std::string::npos) << h2.output;
  EXPECT_EQ(timing_free_records(dir_ + "/s/metrics.jsonl"),
            timing_free_records(dir_ + "/h/metrics.jsonl"));
  // auto on a fresh run: either way, by its times (or too small to time: the tiles).
  RunResult a = run_nanogpt(dir_, "train " + common + " --max_iters=2 --out_dir=a");
  ASSERT_EQ(a.exit_code, 0) << a.output;
  EXPECT_NE(a.output.find("; small products f32: tiles "), std::string::npos) << a.output;
  EXPECT_TRUE(a.output.find("(measured)") != std::string::npos ||
              a.output.find("too little to time: the tiles") != std::string::npos)
      << a.output;
}

TEST_F(MixedPrecisionCli, KernelChoiceIsShownSavedAndKeptOnResume) {
  // Heads of 32: the native bf16 attention can run where the CPU has it.
  const std::string common = std::string(kSmall) +
                             " --n_embd=64 --dropout=0.1 --eval_interval=4 --dtype=bfloat16 "
                             "--lr_decay_iters=8";
  RunResult s = run_nanogpt(dir_, "train " + common +
                                      " --kernel_choice=widened --max_iters=8 "
                                      "--out_dir=s");
  ASSERT_EQ(s.exit_code, 0) << s.output;
  EXPECT_NE(s.output.find("; attention bf16: native "), std::string::npos) << s.output;
  // (onednn "not timed", or "unavailable here" where the CPU or its cap lacks bf16 dot products)
  EXPECT_NE(s.output.find("widened not timed, onednn "), std::string::npos) << s.output;
  EXPECT_NE(s.output.find("-> widened (forced by kernel_choice = 'widened')"), std::string::npos)
      << s.output;
  const nlohmann::json state =
      nlohmann::json::parse(std::ifstream(dir_ + "/s/ckpt/state.json"), nullptr, false);
  EXPECT_EQ(state["kernel_ways"]["attention_bf16"], "widened") << state.dump();
  RunResult h1 = run_nanogpt(dir_, "train " + common +
                                       " --kernel_choice=widened --max_iters=4 "
                                       "--out_dir=h");
  ASSERT_EQ(h1.exit_code, 0) << h1.output;
  RunResult h2 = run_nanogpt(dir_, "train " + common +
                                       " --max_iters=8 --init_from=resume "
                                       "--out_dir=h");  // kernel_choice auto
  ASSERT_EQ(h2.exit_code, 0) << h2.output;
  EXPECT_NE(h2.output.find("-> widened (kept from the checkpoint)"), std::string::npos)
      << h2.output;
  EXPECT_EQ(timing_free_records(dir_ + "/s/metrics.jsonl"),
            timing_free_records(dir_ + "/h/metrics.jsonl"));

  // Too small to time (3 MFLOP per attention group): the faster unit's way, said so; at T 256
  // and 4 heads of 64 (200 MFLOP) it is timed.
  RunResult a = run_nanogpt(dir_, "train " + common + " --max_iters=1 --out_dir=a");
  ASSERT_EQ(a.exit_code, 0) << a.output;
  EXPECT_TRUE(a.output.find("is too little to time: the way of the faster unit") !=
                  std::string::npos ||
              a.output.find("-> widened (the only way here)") != std::string::npos)
      << a.output;
  RunResult t = run_nanogpt(dir_, "train " + common +
                                      " --n_embd=256 --n_head=4 --block_size=256 --batch_size=4 "
                                      "--max_iters=1 --out_dir=t");
  ASSERT_EQ(t.exit_code, 0) << t.output;
  EXPECT_TRUE(std::regex_search(t.output, std::regex("widened [0-9.]+ ms"))) << t.output;
  EXPECT_NE(t.output.find("(measured"), std::string::npos) << t.output;
  RunResult n = run_nanogpt(dir_, "train " + common +
                                      " --kernel_choice=native --max_iters=1 "
                                      "--out_dir=n");
  ASSERT_EQ(n.exit_code, 0) << n.output;
  const bool native =
      n.output.find("-> native (forced by kernel_choice = 'native')") != std::string::npos;
  const bool fallback = n.output.find(
                            "-> widened (kernel_choice = 'native', but this CPU (or its "
                            "cap) and shape cannot run it here: widened)") != std::string::npos;
  EXPECT_TRUE(native || fallback) << n.output;
  RunResult bad = run_nanogpt(dir_, "train " + common + " --kernel_choice=amx --out_dir=bad");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("kernel_choice = 'amx': expected 'auto'"), std::string::npos)
      << bad.output;
}

TEST_F(MixedPrecisionCli, Fp16ReportsAndSavesItsLossScale) {
  RunResult r = run_nanogpt(dir_, std::string("train ") + kSmall +
                                      " --max_iters=4 --lr_decay_iters=4 --eval_interval=4 "
                                      "--dtype=float16 --out_dir=run");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("iter 3: loss"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("scale 65536, skipped 0"), std::string::npos) << r.output;
  bool saw = false;
  for (const auto& j : read_jsonl(dir_ + "/run/metrics.jsonl")) {
    if (!j.contains("loss")) continue;
    saw = true;
    EXPECT_EQ(j["loss_scale"].get<double>(), 65536.0);
    EXPECT_EQ(j["skipped_steps"].get<int64_t>(), 0);
    EXPECT_FALSE(j["skipped"].get<bool>());
  }
  EXPECT_TRUE(saw);
  std::ifstream in(dir_ + "/run/ckpt/state.json");
  const auto state = nlohmann::json::parse(in);
  EXPECT_EQ(state["grad_scaler"]["scale"].get<double>(), 65536.0);
  EXPECT_EQ(state["grad_scaler"]["growth_tracker"].get<int64_t>(), 4);
  // float32 runs carry no scaler anywhere.
  r = run_nanogpt(dir_, std::string("train ") + kSmall +
                            " --max_iters=2 --lr_decay_iters=2 --eval_interval=2 --out_dir=f32");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("scale"), std::string::npos) << r.output;
  std::ifstream in32(dir_ + "/f32/ckpt/state.json");
  EXPECT_FALSE(nlohmann::json::parse(in32).contains("grad_scaler"));
}

TEST_F(MixedPrecisionCli, NonFiniteLossInBf16StopsAndKeepsTheLastGoodCheckpoint) {
  e2e::expect_non_finite_stop_keeps_checkpoint(
      dir_, std::string(kSmall) + " --dtype=bfloat16 --eval_interval=4 --out_dir=blowup",
      {"learning_rate", "bad input data", "dtype bfloat16", "float16", "last good checkpoint"});
}

TEST_F(MixedPrecisionCli, BadDtypeNamesTheKeyAndTheAllowedValues) {
  for (const char* bad : {"float64", "fp16", "half", "int8"}) {
    RunResult r = run_nanogpt(dir_, std::string("train ") + kSmall + " --dtype=" + bad);
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_NE(r.output.find(std::string("dtype = '") + bad + "'"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("'float32', 'bfloat16' or 'float16'"), std::string::npos) << r.output;
  }
}

}  // namespace
}  // namespace nanogpt::e2e
