// Gathering a report's data and the seed-004 aggregates (see report_data.h).
#include "experiments/report_data.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include "core/check.h"
#include "experiments/results_csv.h"

namespace nanogpt {

namespace fs = std::filesystem;

namespace {

double to_double(const std::string& s, double fallback = -1) {
  if (s.empty()) return fallback;
  try {
    return std::stod(s);
  } catch (const std::exception&) {
    return fallback;
  }
}

Spread spread_of(const std::vector<double>& v) {
  Spread s;
  s.n = static_cast<int>(v.size());
  if (v.empty()) return s;
  for (double x : v) s.mean += x;
  s.mean /= static_cast<double>(v.size());
  if (v.size() > 1) {
    double ss = 0;
    for (double x : v) ss += (x - s.mean) * (x - s.mean);
    s.std = std::sqrt(ss / static_cast<double>(v.size() - 1));
  }
  return s;
}

void add_unique(std::vector<std::string>& list, const std::string& name) {
  if (std::find(list.begin(), list.end(), name) == list.end()) list.push_back(name);
}

// Row values override what the curves say (the row was written when the run finished).
RunSummary summary_from_row(const ResultRow& row) {
  RunSummary s;
  s.iterations = static_cast<int64_t>(to_double(row.at("iters"), 0));
  s.wall_s = to_double(row.at("wall_s"), 0);
  s.ms_per_iter = to_double(row.at("ms_per_iter"), 0);
  s.tokens_per_s = to_double(row.at("tokens_per_s"), 0);
  s.mfu = to_double(row.at("mfu"), 0);
  s.peak_tracked_bytes = static_cast<int64_t>(to_double(row.at("peak_tracked_bytes"), 0));
  s.peak_rss_bytes = static_cast<int64_t>(to_double(row.at("peak_rss_bytes"), 0));
  s.train_loss = to_double(row.at("train_loss"));
  s.val_loss = to_double(row.at("val_loss"));
  s.target_iter = static_cast<int64_t>(to_double(row.at("target_iter"), -1));
  s.target_s = to_double(row.at("target_s"));
  return s;
}

void compute_cells(ReportData& data) {
  std::map<std::pair<std::string, std::string>, std::vector<const ReportRun*>> by_cell;
  for (const ReportRun& r : data.runs) by_cell[{r.model, r.optim}].push_back(&r);
  for (const auto& [key, runs] : by_cell) {
    CellStats c;
    std::vector<double> mem, rss, time, ms, train, val, target;
    for (const ReportRun* r : runs) {
      ++c.runs;
      if (r->status == "failed") ++c.failed;
      if (r->status != "ok") continue;
      const RunSummary& s = r->summary;
      mem.push_back(static_cast<double>(s.peak_tracked_bytes) / (1024.0 * 1024.0));
      rss.push_back(static_cast<double>(s.peak_rss_bytes) / (1024.0 * 1024.0));
      time.push_back(s.wall_s);
      ms.push_back(s.ms_per_iter);
      if (s.train_loss >= 0) train.push_back(s.train_loss);
      if (s.val_loss >= 0) val.push_back(s.val_loss);
      if (s.target_iter >= 0 && s.target_s >= 0) {
        target.push_back(s.target_s);
        ++c.reached_target;
      }
    }
    c.memory_mib = spread_of(mem);
    c.rss_mib = spread_of(rss);
    c.time_s = spread_of(time);
    c.ms_per_iter = spread_of(ms);
    c.train_loss = spread_of(train);
    c.val_loss = spread_of(val);
    c.target_s = spread_of(target);
    data.cells[key] = c;
  }
}

}  // namespace

ReportData load_report_data(const std::string& out_dir) {
  ReportData data;
  data.out_dir = out_dir;
  const fs::path csv = fs::path(out_dir) / "results.csv";
  const fs::path runs_dir = fs::path(out_dir) / "runs";
  const fs::path metrics = fs::path(out_dir) / "metrics.jsonl";
  if (fs::exists(csv) || fs::is_directory(runs_dir)) {
    std::map<std::string, ResultRow> rows;  // the last row of each run wins (a retried run)
    std::vector<std::string> order;
    for (const ResultRow& row : read_results_csv(csv.string())) {
      if (!rows.count(row.at("name"))) order.push_back(row.at("name"));
      rows[row.at("name")] = row;
    }
    // Runs with a directory but no row yet: running (or interrupted).
    if (fs::is_directory(runs_dir)) {
      std::vector<std::string> dirs;
      for (const auto& entry : fs::directory_iterator(runs_dir)) {
        if (entry.is_directory()) dirs.push_back(entry.path().filename().string());
      }
      std::sort(dirs.begin(), dirs.end());
      for (const auto& d : dirs) {
        if (!rows.count(d)) order.push_back(d);
      }
    }
    for (const std::string& name : order) {
      ReportRun r;
      r.name = name;
      r.curves = read_run_curves((runs_dir / name / "metrics.jsonl").string());
      auto it = rows.find(name);
      if (it != rows.end()) {
        const ResultRow& row = it->second;
        r.model = row.at("model");
        r.optim = row.at("optim");
        r.seed = static_cast<int64_t>(to_double(row.at("seed"), 0));
        r.status = row.at("status");
        r.error = row.at("error");
        r.summary = summary_from_row(row);
        if (data.target_loss <= 0) data.target_loss = to_double(row.at("target_loss"), 0);
      } else {
        // "<model>.<optim>.s<seed>" (sweep_file.h)
        const size_t a = name.find('.'), b = name.rfind('.');
        r.model = a == std::string::npos ? name : name.substr(0, a);
        r.optim = (a == std::string::npos || b == a) ? "" : name.substr(a + 1, b - a - 1);
        if (b != std::string::npos && b + 2 <= name.size()) {
          r.seed = static_cast<int64_t>(to_double(name.substr(b + 2), 0));
        }
        r.status = "running";
        r.summary = summarize_run(r.curves, 0);
      }
      data.runs.push_back(std::move(r));
    }
    if (data.target_loss > 0) {
      for (ReportRun& r : data.runs) {
        if (r.status == "running") r.summary = summarize_run(r.curves, data.target_loss);
      }
    }
  } else {
    CHECK(fs::exists(metrics),
          "'{}' has neither results.csv (a sweep) nor metrics.jsonl (a training run): give the "
          "out_dir of `nanogpt sweep` or `nanogpt train`",
          out_dir);
    data.single_run = true;
    ReportRun r;
    r.name = fs::path(out_dir).lexically_normal().filename().string();
    if (r.name.empty()) r.name = out_dir;
    r.model = "run";
    r.optim = "-";
    r.status = "ok";
    r.curves = read_run_curves(metrics.string());
    r.summary = summarize_run(r.curves, 0);
    data.runs.push_back(std::move(r));
  }
  for (const ReportRun& r : data.runs) {
    add_unique(data.models, r.model);
    add_unique(data.optims, r.optim);
  }
  compute_cells(data);
  return data;
}

const std::vector<std::string>& figure_metrics() {
  static const std::vector<std::string> m = {"memory", "time", "loss"};
  return m;
}

double cell_metric(const CellStats& c, const std::string& metric) {
  const Spread& s = metric == "memory" ? c.memory_mib : metric == "time" ? c.time_s : c.val_loss;
  return s.n > 0 ? s.mean : std::numeric_limits<double>::quiet_NaN();
}

double percent_change(const ReportData& data, const std::string& model, const std::string& optim,
                      const std::string& metric) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (data.models.empty() || data.optims.empty()) return nan;
  auto base = data.cells.find({data.models[0], data.optims[0]});
  auto cell = data.cells.find({model, optim});
  if (base == data.cells.end() || cell == data.cells.end()) return nan;
  const double b = cell_metric(base->second, metric), v = cell_metric(cell->second, metric);
  if (!(b > 0) || std::isnan(v)) return nan;
  return 100.0 * (v - b) / b;
}

double additivity_deviation(const ReportData& data, const std::string& model,
                            const std::string& optim, const std::string& metric) {
  const double both = percent_change(data, model, optim, metric);
  const double m = percent_change(data, model, data.optims[0], metric);
  const double o = percent_change(data, data.models[0], optim, metric);
  return both - (m + o);  // NaN propagates
}

}  // namespace nanogpt
