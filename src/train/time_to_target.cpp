// Time to target's bookkeeping: records, the first reach, the summary line, resume.
#include "train/time_to_target.h"

#include <fmt/format.h>

#include <fstream>

namespace nanogpt {

TimeToTarget::TimeToTarget(double target_loss, int64_t eval_interval, int64_t tokens_per_iter,
                           int64_t eval_from)
    : target_loss_(target_loss),
      eval_interval_(eval_interval),
      eval_from_(eval_from),
      tokens_per_iter_(tokens_per_iter) {}

bool TimeToTarget::due(int64_t iter, int64_t max_iters) const {
  // eval_from, eval_from + interval, ... (a grid that starts where the caller says, not at the
  // interval's multiples), and the last iteration.
  return enabled() &&
         ((iter >= eval_from_ && (iter - eval_from_) % eval_interval_ == 0) || iter == max_iters);
}

nlohmann::ordered_json TimeToTarget::record(int64_t iter, double loss, double eval_seconds,
                                            double elapsed_seconds) {
  eval_seconds_total_ += eval_seconds;
  ++evaluations_;
  last_iter_ = iter;
  last_loss_ = loss;
  if (best_loss_ < 0 || loss < best_loss_) best_loss_ = loss;
  const bool first_reach = !reached_ && loss <= target_loss_;
  if (first_reach) {
    reached_ = true;
    reached_iter_ = iter;
    reached_wall_s_ = elapsed_seconds;
    reached_eval_s_ = eval_seconds_total_;
  }
  nlohmann::ordered_json rec;
  rec["iter"] = iter;
  rec["full_val_loss"] = loss;
  rec["eval_s"] = eval_seconds;
  rec["eval_total_s"] = eval_seconds_total_;
  rec["tokens"] = iter * tokens_per_iter_;
  rec["elapsed_s"] = elapsed_seconds;
  if (first_reach) rec["target_reached"] = true;
  return rec;
}

void TimeToTarget::restore_from_metrics(const std::string& metrics_path) {
  std::ifstream in(metrics_path);
  std::string line;
  while (std::getline(in, line)) {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const std::exception&) {
      continue;  // a torn line
    }
    if (!j.is_object() || !j.contains("full_val_loss") || !j["full_val_loss"].is_number() ||
        !j.contains("iter") || !j["iter"].is_number_integer() || !j.contains("eval_s") ||
        !j["eval_s"].is_number() || !j.contains("elapsed_s") || !j["elapsed_s"].is_number()) {
      continue;
    }
    // The same bookkeeping as when it was measured, against the current target_loss.
    record(j["iter"].get<int64_t>(), j["full_val_loss"].get<double>(), j["eval_s"].get<double>(),
           j["elapsed_s"].get<double>());
  }
}

nlohmann::ordered_json TimeToTarget::final_record(int64_t end_iter) const {
  nlohmann::ordered_json rec;
  rec["iter"] = end_iter;
  rec["target_loss"] = target_loss_;
  rec["reached"] = reached_;
  if (reached_) {
    rec["target_iter"] = reached_iter_;
    rec["tokens"] = reached_iter_ * tokens_per_iter_;
    rec["wall_s"] = reached_wall_s_;
    rec["eval_s"] = reached_eval_s_;
  }
  rec["best_full_val_loss"] = best_loss_ < 0 ? nlohmann::ordered_json(nullptr)
                                             : nlohmann::ordered_json(best_loss_);
  rec["evaluations"] = evaluations_;
  return rec;
}

std::string format_token_count(int64_t tokens) {
  const double t = static_cast<double>(tokens);
  if (t >= 1e9) return fmt::format("{:.2f}B", t / 1e9);
  if (t >= 1e6) return fmt::format("{:.1f}M", t / 1e6);
  if (t >= 1e3) return fmt::format("{:.1f}K", t / 1e3);
  return fmt::format("{}", tokens);
}

std::string TimeToTarget::summary_line() const {
  if (reached_) {
    return fmt::format(
        "target val loss {:g} reached at iter {}: {:.1f} s wall (of which {:.1f} s full "
        "evaluation), {} tokens",
        target_loss_, reached_iter_, reached_wall_s_, reached_eval_s_,
        format_token_count(reached_iter_ * tokens_per_iter_));
  }
  if (best_loss_ < 0) {
    return fmt::format("target val loss {:g} not reached (no full evaluation ran)", target_loss_);
  }
  return fmt::format("target val loss {:g} not reached (best {:.4f} in {} full evaluations)",
                     target_loss_, best_loss_, evaluations_);
}

}  // namespace nanogpt
