// What one training run did, read from its out_dir/metrics.jsonl (the trainer's log): the curves,
// and the figures a sweep row records (final losses, median step time, throughput, MFU, peak
// memory, and when val loss first reached a target). Reads a file that is still being written
// (a torn last line is skipped).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace nanogpt {

struct StepRecord {  // one log line (every log_interval iterations)
  int64_t iter = 0;
  double loss = 0, ms = 0, tokens_per_s = 0, mfu = 0, elapsed_s = -1;
  int64_t peak_mem_bytes = 0, peak_rss_bytes = 0;
};

struct EvalRecord {  // one evaluation
  int64_t iter = 0;
  double train_loss = 0, val_loss = 0, elapsed_s = -1;
};

struct RunCurves {
  std::vector<StepRecord> steps;
  std::vector<EvalRecord> evals;
};

// The records of a metrics.jsonl; missing file -> empty curves. Throws nanogpt::Error only for a
// line that is valid JSON of the wrong shape.
RunCurves read_run_curves(const std::string& metrics_path);

struct RunSummary {
  int64_t iterations = 0;  // last iteration evaluated or logged (+1 for a logged step)
  double wall_s = 0;       // elapsed_s at the end: training wall time across resumes
  double ms_per_iter = 0;  // median of the logged step times
  double tokens_per_s = 0, mfu = 0;  // medians
  int64_t peak_tracked_bytes = 0, peak_rss_bytes = 0;
  double train_loss = -1, val_loss = -1;  // last evaluation; -1 if none
  int64_t target_iter = -1;               // first eval with val_loss <= target; -1 if never
  double target_s = -1;
};

RunSummary summarize_run(const RunCurves& curves, double target_loss);

}  // namespace nanogpt
