// What `nanogpt report` shows, gathered from an out_dir: a sweep's results.csv plus every run's
// metrics.jsonl (runs still going included), or a single training run's metrics.jsonl. Also the
// seed-004 aggregates: Table 1 (mean and spread over seeds per model x optimization), Figure 4
// (percent change against the default cell) and Figure 5 (deviation from additivity).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "experiments/run_summary.h"

namespace nanogpt {

struct ReportRun {
  std::string name, model, optim;
  int64_t seed = 0;
  std::string status;  // "ok", "failed", "running" (metrics but no row yet)
  std::string error;
  RunSummary summary;
  RunCurves curves;
};

struct Spread {  // over seeds
  int n = 0;
  double mean = 0, std = 0;  // sample standard deviation (0 for one seed)
};

struct CellStats {  // one model x optimization cell, over its finished runs
  Spread memory_mib, rss_mib, time_s, ms_per_iter, train_loss, val_loss, target_s;
  int runs = 0, failed = 0, reached_target = 0;
};

struct ReportData {
  std::string out_dir;
  bool single_run = false;
  double target_loss = 0;
  std::vector<std::string> models, optims;  // in sweep order (first appearance)
  std::vector<ReportRun> runs;
  std::map<std::pair<std::string, std::string>, CellStats> cells;  // (model, optim)
};

// Throws nanogpt::Error when out_dir has neither results.csv nor metrics.jsonl.
ReportData load_report_data(const std::string& out_dir);

// The three metrics of seed 004's figures, by name: "memory", "time", "loss".
const std::vector<std::string>& figure_metrics();
// Mean of a metric in a cell (NaN if the cell has no finished run).
double cell_metric(const CellStats& cell, const std::string& metric);
// Figure 4: 100 * (cell - default) / default, default = (models[0], optims[0]). NaN if unknown.
double percent_change(const ReportData& data, const std::string& model, const std::string& optim,
                      const std::string& metric);
// Figure 5: percent_change(m, o) - (percent_change(m, o0) + percent_change(m0, o)).
double additivity_deviation(const ReportData& data, const std::string& model,
                            const std::string& optim, const std::string& metric);

}  // namespace nanogpt
