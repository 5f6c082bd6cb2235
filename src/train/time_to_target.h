// Time to target (keys target_loss, target_eval_interval, stop_at_target): when full-validation
// evaluations are due, what each one records, the first one at or below target_loss (wall time,
// of which full-evaluation time, tokens, iteration), the final metrics record and log line, and
// what a resumed run takes back from the metrics.jsonl records it keeps.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace nanogpt {

class TimeToTarget {
 public:
  TimeToTarget() = default;  // off
  // eval_from: no full evaluation before this iteration (but the last).
  TimeToTarget(double target_loss, int64_t eval_interval, int64_t tokens_per_iter,
               int64_t eval_from = 0);

  bool enabled() const { return target_loss_ > 0; }
  // A full evaluation is due at eval_from, eval_from + eval_interval, ..., and at the last
  // iteration.
  bool due(int64_t iter, int64_t max_iters) const;

  // Records the full evaluation at `iter` (iter steps done) that took eval_seconds and ended
  // elapsed_seconds into the run (training + all evaluations so far, eval_seconds included).
  // Returns the metrics.jsonl record for it. The first loss <= target_loss is the result.
  nlohmann::ordered_json record(int64_t iter, double loss, double eval_seconds,
                                double elapsed_seconds);
  bool reached() const { return reached_; }
  // A run resumed from metrics.jsonl (the records kept, those before the checkpoint's
  // iteration): full-evaluation time so far, the best loss and, if one of them reached the
  // current target_loss, the result. Lines that are not full-evaluation records are skipped.
  void restore_from_metrics(const std::string& metrics_path);

  // {"iter": end_iter, "target_loss", "reached", "target_iter", "tokens", "wall_s", "eval_s",
  // "best_full_val_loss", "evaluations"}: "iter" is where the run ended (metrics.jsonl readers
  // expect one on every record), at or after any checkpoint, so resuming (which keeps records
  // before the checkpoint's iteration) always drops it and the resumed run writes a new one.
  nlohmann::ordered_json final_record(int64_t end_iter) const;
  // "target val loss 1.88 reached at iter 1500: 12.3 s wall (of which 1.1 s full evaluation),
  // 1.2M tokens" or "target val loss 1.88 not reached (best 1.93 in 4 full evaluations)".
  std::string summary_line() const;

  int64_t reached_iter() const { return reached_iter_; }
  // The last evaluation recorded (-1 / -1 when none).
  int64_t last_evaluated_iter() const { return last_iter_; }
  double last_loss() const { return last_loss_; }
  double best_loss() const { return best_loss_; }

 private:
  double target_loss_ = 0;
  int64_t eval_interval_ = 1;
  int64_t eval_from_ = 0;
  int64_t tokens_per_iter_ = 0;
  double eval_seconds_total_ = 0;  // every full evaluation so far, resumed runs included
  int64_t evaluations_ = 0;
  double best_loss_ = -1;  // -1: none yet
  int64_t last_iter_ = -1;
  double last_loss_ = -1;
  bool reached_ = false;
  int64_t reached_iter_ = -1;
  double reached_wall_s_ = 0, reached_eval_s_ = 0;
};

// 1.2M, 345.6K, 999 (tokens in the summary line).
std::string format_token_count(int64_t tokens);

}  // namespace nanogpt
