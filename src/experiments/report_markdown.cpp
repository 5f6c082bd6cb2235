// report.md: seed 004's Table 1, Figures 4 and 5 as tables, time to target, failed runs, per-run
// rows (see report.h).
#include <fmt/format.h>

#include <cmath>

#include "experiments/report.h"
#include "train/metrics.h"

namespace nanogpt {

namespace {

std::string pm(const Spread& s, int digits) {
  if (s.n == 0) return "-";
  if (s.n == 1) return fmt::format("{:.{}f}", s.mean, digits);
  return fmt::format("{:.{}f} ± {:.{}f}", s.mean, digits, s.std, digits);
}

std::string pct(double v) { return std::isnan(v) ? "-" : fmt::format("{:+.1f}%", v); }

}  // namespace

std::string report_markdown(const ReportData& d) {
  std::string md;
  md += fmt::format("# nanogpt report: {}\n\n", d.out_dir);
  if (d.single_run) {
    const ReportRun& r = d.runs.front();
    const RunSummary& s = r.summary;
    md += fmt::format(
        "One training run ({} evaluations, {} logged steps so far).\n\n"
        "| iterations | wall time | ms/iter | tokens/s | MFU | peak tracked | peak RSS | train loss | "
        "val loss |\n|---|---|---|---|---|---|---|---|---|\n| {} | {} | {:.1f} | {:.0f} | {:.1f}% | {} | "
        "{} | {} | {} |\n\nCurves: see report.html.\n",
        r.curves.evals.size(), r.curves.steps.size(), s.iterations, format_duration(s.wall_s),
        s.ms_per_iter, s.tokens_per_s, 100 * s.mfu, format_bytes(s.peak_tracked_bytes),
        format_bytes(s.peak_rss_bytes), s.train_loss < 0 ? "-" : fmt::format("{:.4f}", s.train_loss),
        s.val_loss < 0 ? "-" : fmt::format("{:.4f}", s.val_loss));
    return md;
  }
  int ok = 0, failed = 0, running = 0;
  for (const ReportRun& r : d.runs) {
    ok += r.status == "ok";
    failed += r.status == "failed";
    running += r.status == "running";
  }
  md += fmt::format("{} runs: {} finished, {} failed, {} running or interrupted. Values are mean ± "
                    "sample standard deviation over seeds (n = finished runs of the cell).\n\n",
                    d.runs.size(), ok, failed, running);

  md += "## Table 1: memory, time and final loss per model and optimization\n\n";
  md += "| optimization | model | n | peak memory (MiB, tracked) | peak RSS (MiB) | training time (s) | "
        "ms/iter | final train loss | final val loss |\n|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& o : d.optims) {
    for (const auto& m : d.models) {
      auto it = d.cells.find({m, o});
      if (it == d.cells.end()) continue;
      const CellStats& c = it->second;
      md += fmt::format("| {} | {} | {}{} | {} | {} | {} | {} | {} | {} |\n", o, m, c.val_loss.n,
                        c.failed ? fmt::format(" ({} failed)", c.failed) : "", pm(c.memory_mib, 1),
                        pm(c.rss_mib, 1), pm(c.time_s, 1), pm(c.ms_per_iter, 1),
                        pm(c.train_loss, 4), pm(c.val_loss, 4));
    }
  }

  md += fmt::format("\n## Figure 4: percent change against the default ({} / {})\n\n",
                    d.models.front(), d.optims.front());
  md += "| optimization | model | memory | time | val loss |\n|---|---|---|---|---|\n";
  for (const auto& o : d.optims) {
    for (const auto& m : d.models) {
      md += fmt::format("| {} | {} | {} | {} | {} |\n", o, m, pct(percent_change(d, m, o, "memory")),
                        pct(percent_change(d, m, o, "time")), pct(percent_change(d, m, o, "loss")));
    }
  }
  md += "\n## Figure 5: deviation from additivity\n\n"
        "Percent change of model change + optimization together, minus the sum of each alone "
        "(0 = the effects add up).\n\n"
        "| optimization | model | memory | time | val loss |\n|---|---|---|---|---|\n";
  for (size_t oi = 1; oi < d.optims.size(); ++oi) {
    for (size_t mi = 1; mi < d.models.size(); ++mi) {
      const auto &o = d.optims[oi], &m = d.models[mi];
      md += fmt::format("| {} | {} | {} | {} | {} |\n", o, m,
                        pct(additivity_deviation(d, m, o, "memory")),
                        pct(additivity_deviation(d, m, o, "time")),
                        pct(additivity_deviation(d, m, o, "loss")));
    }
  }
  md += fmt::format("\n## Time to target val loss {}\n\n",
                    d.target_loss > 0 ? fmt::format("{:g}", d.target_loss) : "(none set)");
  md += "| optimization | model | reached | time (s) |\n|---|---|---|---|\n";
  for (const auto& o : d.optims) {
    for (const auto& m : d.models) {
      auto it = d.cells.find({m, o});
      if (it == d.cells.end()) continue;
      md += fmt::format("| {} | {} | {}/{} | {} |\n", o, m, it->second.reached_target,
                        it->second.val_loss.n, pm(it->second.target_s, 1));
    }
  }
  if (failed > 0) {
    md += "\n## Failed runs\n\n| run | error |\n|---|---|\n";
    for (const ReportRun& r : d.runs) {
      if (r.status != "failed") continue;
      std::string e = r.error;
      for (char& c : e) {
        if (c == '|') c = '/';
      }
      md += fmt::format("| {} | {} |\n", r.name, e);
    }
  }
  md += "\n## Runs\n\nMFU: each run's, against the peak of its matmuls' arithmetic measured by the run "
        "(bf16 dot products for bfloat16 runs on a CPU that has them, fp32 FMAs otherwise).\n\n"
        "| run | status | iterations | wall time (s) | ms/iter | tokens/s | MFU | peak "
        "tracked | peak RSS | val loss | target reached at |\n|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const ReportRun& r : d.runs) {
    const RunSummary& s = r.summary;
    md += fmt::format("| {} | {} | {} | {:.1f} | {:.1f} | {:.0f} | {:.1f}% | {} | {} | {} | {} |\n",
                      r.name, r.status, s.iterations, s.wall_s, s.ms_per_iter, s.tokens_per_s,
                      100 * s.mfu, format_bytes(s.peak_tracked_bytes),
                      format_bytes(s.peak_rss_bytes),
                      s.val_loss < 0 ? "-" : fmt::format("{:.4f}", s.val_loss),
                      s.target_iter < 0 ? "-"
                                        : fmt::format("iter {} ({:.1f} s)", s.target_iter,
                                                      s.target_s));
  }
  return md;
}

}  // namespace nanogpt
