// Reading metrics.jsonl into curves and a run's summary figures.
#include "experiments/run_summary.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/check.h"

namespace nanogpt {

namespace {

double number_or(const nlohmann::json& j, const char* key, double fallback) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : fallback;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

RunCurves read_run_curves(const std::string& path) {
  RunCurves curves;
  std::ifstream in(path);
  std::string line;
  int64_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty()) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const std::exception&) {
      continue;  // a line being written right now, or torn by a crash
    }
    CHECK(j.is_object() && j.contains("iter") && j["iter"].is_number_integer(),
          "{}:{}: expected a JSON object with an integer 'iter' (a metrics.jsonl written by "
          "`nanogpt train`)",
          path, line_no);
    const int64_t iter = j["iter"].get<int64_t>();
    if (j.contains("val_loss")) {
      curves.evals.push_back({iter, number_or(j, "train_loss", 0), number_or(j, "val_loss", 0),
                              number_or(j, "elapsed_s", -1)});
    } else if (j.contains("loss")) {
      StepRecord s;
      s.iter = iter;
      s.loss = number_or(j, "loss", 0);
      s.ms = number_or(j, "ms", 0);
      s.tokens_per_s = number_or(j, "tokens_per_s", 0);
      s.mfu = number_or(j, "mfu", 0);
      s.elapsed_s = number_or(j, "elapsed_s", -1);
      s.peak_mem_bytes = static_cast<int64_t>(number_or(j, "peak_mem_bytes", 0));
      s.peak_rss_bytes = static_cast<int64_t>(number_or(j, "peak_rss_bytes", 0));
      curves.steps.push_back(s);
    }
  }
  return curves;
}

RunSummary summarize_run(const RunCurves& c, double target_loss) {
  RunSummary s;
  std::vector<double> ms, tps, mfu;
  for (const StepRecord& r : c.steps) {
    // The first logged step pays for warm-up (page faults, primitive creation): left out of the
    // medians when there are others.
    if (&r == &c.steps.front() && c.steps.size() > 2) continue;
    ms.push_back(r.ms);
    tps.push_back(r.tokens_per_s);
    mfu.push_back(r.mfu);
  }
  s.ms_per_iter = median(ms);
  s.tokens_per_s = median(tps);
  s.mfu = median(mfu);
  for (const StepRecord& r : c.steps) {
    s.iterations = std::max(s.iterations, r.iter + 1);
    s.peak_tracked_bytes = std::max(s.peak_tracked_bytes, r.peak_mem_bytes);
    s.peak_rss_bytes = std::max(s.peak_rss_bytes, r.peak_rss_bytes);
    s.wall_s = std::max(s.wall_s, r.elapsed_s);
  }
  for (const EvalRecord& e : c.evals) {
    s.iterations = std::max(s.iterations, e.iter);
    s.wall_s = std::max(s.wall_s, e.elapsed_s);
    s.train_loss = e.train_loss;
    s.val_loss = e.val_loss;
    if (target_loss > 0 && s.target_iter < 0 && e.val_loss <= target_loss) {
      s.target_iter = e.iter;
      s.target_s = e.elapsed_s;
    }
  }
  return s;
}

}  // namespace nanogpt
