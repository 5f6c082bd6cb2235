// The micro-batch autotuner (see autotune.h).
#include "experiments/autotune.h"

#include <fmt/format.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>

#include "core/check.h"
#include "core/cpu_info.h"
#include "experiments/estimate.h"
#include "train/metrics.h"
#include "train/trainer.h"

namespace nanogpt {

namespace {

// A trial's dtype ('auto' as the trainer resolves it); float32 for a bad name (the trial fails
// with the trainer's message).
DType trial_dtype(const std::string& name) {
  DType t = DType::kF32;
  parse_dtype(name == "auto" ? choose_auto_dtype().dtype : name, t);
  return t;
}

}  // namespace

namespace fs = std::filesystem;

int64_t parse_memory_size(const std::string& text, const std::string& key) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::string unit = text.substr(used);
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  double scale = 0;
  if (unit.empty() || unit == "b") scale = 1;
  if (unit == "k" || unit == "kb" || unit == "kib") scale = 1024.0;
  if (unit == "m" || unit == "mb" || unit == "mib") scale = 1024.0 * 1024;
  if (unit == "g" || unit == "gb" || unit == "gib") scale = 1024.0 * 1024 * 1024;
  CHECK(used > 0 && scale > 0 && value > 0,
        "{} = '{}': expected a size such as 2GiB, 512MiB or a number of bytes", key, text);
  return static_cast<int64_t>(value * scale);
}

AutotuneResult autotune(const TrainConfig& base, const AutotuneOptions& options) {
  const int64_t T = base.model.block_size;
  CHECK(options.tokens_per_step > 0 && options.tokens_per_step % T == 0,
        "tokens_per_step = {}: expected a positive multiple of block_size ({}), e.g. "
        "--tokens_per_step={}",
        options.tokens_per_step, T, T * base.batch_size * base.gradient_accumulation_steps);
  const int64_t sequences = options.tokens_per_step / T;
  std::vector<std::string> dtypes = options.dtypes;
  if (dtypes.empty()) dtypes.push_back(base.dtype);

  AutotuneResult result;
  if (base.threads > 0) omp_set_num_threads(static_cast<int>(base.threads));
  for (const std::string& name : dtypes) {
    const DType t = trial_dtype(name);
    const bool seen = std::any_of(result.peaks.begin(), result.peaks.end(),
                                  [&](const ComputePeaks& p) { return p.dtype == t; });
    if (!seen) result.peaks.push_back(measure_compute_peaks(t, omp_get_max_threads()));
  }
  const fs::path scratch =
      fs::temp_directory_path() / fmt::format("nanogpt-autotune-{}", static_cast<long>(::getpid()));
  for (const std::string& dtype : dtypes) {
    for (int64_t b = sequences; b >= 1; --b) {  // largest micro-batch first
      if (sequences % b != 0) continue;
      AutotuneTrial trial;
      trial.micro_batch = b;
      trial.accumulation = sequences / b;
      trial.dtype = dtype;
      TrainConfig c = base;
      c.batch_size = b;
      c.gradient_accumulation_steps = trial.accumulation;
      c.dtype = dtype;
      TrainingEstimate estimate;
      try {
        estimate = estimate_training(resolve_for_estimate(c));
      } catch (const Error& e) {
        trial.skipped = fmt::format("not possible: {}", e.what());
        result.trials.push_back(trial);
        continue;
      }
      trial.estimated_peak_bytes = estimate.peak_bytes;
      if (options.max_memory_bytes > 0 && estimate.peak_bytes > options.max_memory_bytes) {
        trial.skipped = "over the memory cap";
        result.trials.push_back(trial);
        continue;
      }
      // A short run in this process: 1 warm-up + timed steps, one tiny eval, no checkpoint kept.
      c.init_from = "scratch";
      c.out_dir = (scratch / fmt::format("b{}_a{}_{}", b, trial.accumulation, dtype)).string();
      c.max_iters = 1 + options.timed_steps;
      c.eval_interval = 1000000;
      c.eval_iters = 1;
      c.log_interval = 1000000;
      c.always_save_checkpoint = false;
      c.profile = false;
      TrainOptions quiet;
      quiet.quiet = true;
      try {
        const TrainResult r = run_training(c, quiet);
        trial.ms_per_step = r.median_step_ms;
        trial.measured_peak_bytes = r.peak_tracked_bytes;
        trial.tokens_per_s =
            static_cast<double>(options.tokens_per_step) / (r.median_step_ms / 1e3);
        trial.mfu = model_flops_utilization(
            flops_per_token(estimate.model, estimate.params_for_mfu),
            static_cast<double>(options.tokens_per_step), r.median_step_ms / 1e3,
            mfu_peak_for(result.peaks_for(trial_dtype(c.dtype))).flops_per_s);
      } catch (const Error& e) {
        trial.skipped = fmt::format("failed: {}", e.what());
      }
      std::error_code ignored;
      fs::remove_all(c.out_dir, ignored);
      result.trials.push_back(trial);
      const int i = static_cast<int>(result.trials.size()) - 1;
      if (trial.skipped.empty() &&
          (result.best < 0 || trial.ms_per_step < result.trials[result.best].ms_per_step)) {
        result.best = i;
      }
    }
  }
  std::error_code ignored;
  fs::remove_all(scratch, ignored);
  return result;
}

const ComputePeaks& AutotuneResult::peaks_for(DType dtype) const {
  for (const ComputePeaks& p : peaks) {
    if (p.dtype == dtype) return p;
  }
  fail("autotune: no peaks measured for dtype {}", dtype_name(dtype));
}

std::string format_autotune(const AutotuneResult& r, const AutotuneOptions& options) {
  std::string units;
  for (const ComputePeaks& p : r.peaks) {
    const MfuPeak m = mfu_peak_for(p);
    units += fmt::format("{}{} {:.0f} GFLOP/s {}", units.empty() ? "" : ", ", dtype_name(p.dtype),
                         m.flops_per_s / 1e9, m.arithmetic);
  }
  std::string out = fmt::format(
      "{} tokens per optimizer step; memory cap {}; MFU against the measured peak of each dtype's "
      "matmuls ({})\n"
      "  {:>11} {:>12} {:>9} {:>12} {:>12} {:>11} {:>7} {:>12}\n",
      options.tokens_per_step,
      options.max_memory_bytes > 0 ? format_bytes(options.max_memory_bytes) : "none", units,
      "micro-batch", "accumulation", "dtype", "est. peak", "ms/step", "tokens/s", "MFU", "peak");
  for (size_t i = 0; i < r.trials.size(); ++i) {
    const AutotuneTrial& t = r.trials[i];
    const std::string mark = static_cast<int>(i) == r.best ? "* " : "  ";
    if (!t.skipped.empty()) {
      out += fmt::format(
          "{}{:>11} {:>12} {:>9} {:>12}  {}\n", mark, t.micro_batch, t.accumulation, t.dtype,
          t.estimated_peak_bytes ? format_bytes(t.estimated_peak_bytes) : "-", t.skipped);
      continue;
    }
    out += fmt::format("{}{:>11} {:>12} {:>9} {:>12} {:>12.1f} {:>11.0f} {:>6.1f}% {:>12}\n", mark,
                       t.micro_batch, t.accumulation, t.dtype, format_bytes(t.estimated_peak_bytes),
                       t.ms_per_step, t.tokens_per_s, 100 * t.mfu,
                       format_bytes(t.measured_peak_bytes));
  }
  if (r.best >= 0) {
    const AutotuneTrial& b = r.trials[r.best];
    out += fmt::format("best (*): --batch_size={} --gradient_accumulation_steps={} --dtype={}\n",
                       b.micro_batch, b.accumulation, b.dtype);
  } else {
    out += "no split could run (see the reasons above)\n";
  }
  return out;
}

TrainConfig autotune_winner_config(const TrainConfig& config, const AutotuneResult& r) {
  CHECK(r.best >= 0, "autotune found no split that runs, so there is no config to write");
  TrainConfig c = config;
  c.batch_size = r.trials[r.best].micro_batch;
  c.gradient_accumulation_steps = r.trials[r.best].accumulation;
  c.dtype = r.trials[r.best].dtype;
  return c;
}

}  // namespace nanogpt
