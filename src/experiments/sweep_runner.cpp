// The sweep loop (see sweep_runner.h).
#include "experiments/sweep_runner.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <set>
#include <thread>

#include "core/check.h"
#include "core/config.h"
#include "core/timer.h"
#include "experiments/child_process.h"
#include "experiments/estimate.h"
#include "experiments/results_csv.h"
#include "experiments/run_summary.h"
#include "train/metrics.h"
#include "train/stop_request.h"
#include "train/train_config.h"
#include "train/trainer.h"

namespace nanogpt {

namespace fs = std::filesystem;

namespace {

// What the run will be, from its own arguments: max_iters, tokens per iteration, parameters.
struct RunShape {
  int64_t max_iters = 0, tokens_per_iter = 0, params = -1;
};

RunShape shape_of(const SweepRun& run) {
  TrainConfig config;
  apply_assignments(config, parse_command_line(run.train_args));
  RunShape s;
  s.max_iters = config.max_iters;
  s.tokens_per_iter =
      config.batch_size * config.model.block_size * config.gradient_accumulation_steps;
  try {
    s.params = estimate_training(resolve_for_estimate(config)).params;
  } catch (const Error&) {
    // a config the trainer will reject: the run's row carries the trainer's own error
  }
  return s;
}

// The trainer's error message from a failed run's stderr ("error: ..." lines, else the tail).
std::string failure_message(const std::string& stderr_path, const ChildProcess& child) {
  std::string tail = tail_lines(stderr_path, 20);
  std::string error;
  size_t pos = 0;
  while ((pos = tail.find("error: ", pos)) != std::string::npos) {
    size_t end = tail.find('\n', pos);
    error = tail.substr(pos + 7, end == std::string::npos ? std::string::npos : end - pos - 7);
    pos = end == std::string::npos ? tail.size() : end;
  }
  if (error.empty()) error = tail_lines(stderr_path, 3);
  if (child.signal() != 0) {
    return fmt::format("killed by signal {}{}{}", child.signal(), error.empty() ? "" : ": ",
                       error);
  }
  return fmt::format("exit code {}: {}", child.exit_code(),
                     error.empty() ? "(no error output)" : error);
}

std::string number(double v, int precision = 6) {
  return v < 0 ? std::string() : fmt::format("{:.{}g}", v, precision);
}

class ProgressLine {
 public:
  ProgressLine(int64_t total, SweepOptions::Progress mode)
      : total_(total),
        tty_(mode == SweepOptions::Progress::kLive ||
             (mode == SweepOptions::Progress::kAuto && ::isatty(STDERR_FILENO) != 0)) {}

  void update(const std::string& text) {
    if (!tty_) return;
    std::string line = text.size() > 150 ? text.substr(0, 150) : text;
    std::fprintf(stderr, "\r\033[K%s", line.c_str());
    std::fflush(stderr);
  }
  void say(const std::string& text) {
    if (tty_) std::fputs("\r\033[K", stderr);
    std::fprintf(stderr, "%s\n", text.c_str());
    std::fflush(stderr);
  }
  int64_t total() const { return total_; }

 private:
  int64_t total_;
  bool tty_;
};

}  // namespace

std::string results_path(const std::string& out_dir) {
  return (fs::path(out_dir) / "results.csv").string();
}

SweepOutcome run_sweep(const SweepPlan& plan, const SweepOptions& options) {
  SweepOutcome outcome;
  const std::string csv = results_path(plan.out_dir);
  std::set<std::string> finished, failed;
  for (const ResultRow& row : read_results_csv(csv)) {
    const std::string& name = row.at("name");
    if (row.at("status") == "ok") {
      finished.insert(name);
      failed.erase(name);
    } else {
      failed.insert(name);
    }
  }
  if (options.dry_run) {
    for (const SweepRun& run : plan.runs) {
      std::string cmd = "nanogpt train";
      for (const auto& a : run.train_args) cmd += " " + a;
      const bool done = finished.count(run.name) || (failed.count(run.name) && !options.retry_failed);
      fmt::print("{:<40} {}{} --out_dir={}\n", run.name, done ? "(recorded) " : "", cmd,
                 run.run_dir);
    }
    return outcome;
  }
  fs::create_directories(plan.out_dir);

  // SIGTERM, SIGINT, SIGUSR1: passed on to the running training, which stops at its next step
  // boundary with its checkpoint; the sweep then ends without a row for that run.
  const StopRequest stop;
  ProgressLine progress(static_cast<int64_t>(plan.runs.size()), options.progress);
  const auto poll = std::chrono::milliseconds(
      std::clamp<int64_t>(static_cast<int64_t>(options.progress_interval_s * 1000 / 4), 1, 50));
  Timer sweep_timer;
  double seconds_of_runs = 0;  // wall time of the runs done in this session
  int64_t runs_timed = 0;
  int64_t index = 0;
  for (const SweepRun& run : plan.runs) {
    ++index;
    if (stop.requested()) {  // between runs: the next one does not start
      outcome.stopped_by = StopRequest::signal_name(stop.signal());
      break;
    }
    if (finished.count(run.name) || (failed.count(run.name) && !options.retry_failed)) {
      ++outcome.skipped;
      continue;
    }
    const RunShape shape = shape_of(run);
    fs::create_directories(run.run_dir);
    // A kill between moving the old checkpoint aside and renaming the new one into place leaves
    // only `<ckpt>.old` (io/atomic_dir.h): that is a checkpoint to resume from too.
    const std::string ckpt = checkpoint_dir_of(run.run_dir);
    const bool resume = fs::exists(fs::path(ckpt) / "state.json") ||
                        fs::exists(fs::path(ckpt + ".old") / "state.json");
    std::vector<std::string> args = {"train"};
    args.insert(args.end(), run.train_args.begin(), run.train_args.end());
    args.push_back("--out_dir=" + run.run_dir);
    if (resume) {
      args.push_back("--init_from=resume");
      ++outcome.resumed;
    }
    const std::string out_log = (fs::path(run.run_dir) / "train.log").string();
    const std::string err_log = (fs::path(run.run_dir) / "stderr.log").string();
    // stderr.log holds this attempt's errors only (train.log keeps every attempt).
    fs::remove(err_log);
    progress.say(fmt::format("[{}/{}] {} {}", index, plan.runs.size(), run.name,
                             resume ? "(resuming from its checkpoint)" : "started"));
    Timer run_timer;
    const std::string metrics_path = (fs::path(run.run_dir) / "metrics.jsonl").string();
    {
      ChildProcess child(args, out_log, err_log);
      Timer since_update;
      bool passed_on = false;
      while (!child.finished()) {
        std::this_thread::sleep_for(poll);
        if (stop.requested() && !passed_on) {
          child.send_signal(stop.signal());
          passed_on = true;
        }
        if (since_update.seconds() < options.progress_interval_s) continue;
        since_update.reset();
        const RunCurves curves = read_run_curves(metrics_path);
        const int64_t iter = curves.steps.empty() ? 0 : curves.steps.back().iter + 1;
        const double loss = curves.steps.empty() ? 0 : curves.steps.back().loss;
        const double frac =
            shape.max_iters > 0 ? std::min(1.0, static_cast<double>(iter) / shape.max_iters) : 0;
        const int64_t left = progress.total() - index;  // runs after this one (some may be skipped)
        double per_run = runs_timed > 0 ? seconds_of_runs / runs_timed
                                        : (frac > 0.02 ? run_timer.seconds() / frac : -1);
        std::string eta = per_run < 0 ? std::string("?")
                                      : format_duration(per_run * (1 - frac) + per_run * left);
        progress.update(fmt::format("[{}/{}] {}: iter {}/{}, loss {:.4f} | sweep {} elapsed, ETA {}",
                                    index, plan.runs.size(), run.name, iter, shape.max_iters,
                                    loss, format_duration(sweep_timer.seconds()), eta));
      }
      if (child.exit_code() == kStoppedExitCode) {
        // Stopped on request with its checkpoint: no row, so that a rerun resumes it.
        outcome.stopped_by = stop.requested() ? StopRequest::signal_name(stop.signal())
                                              : std::string("its max_wall_minutes");
        progress.say(
            fmt::format("[{}/{}] {} stopped by {} with its checkpoint in {}; run the "
                        "sweep again to resume it",
                        index, plan.runs.size(), run.name, outcome.stopped_by, ckpt));
        break;
      }
      seconds_of_runs += run_timer.seconds();
      ++runs_timed;
      ++outcome.ran;

      ResultRow row;
      row["name"] = run.name;
      row["model"] = run.model;
      row["optim"] = run.optim;
      row["seed"] = std::to_string(run.seed);
      row["params"] = shape.params >= 0 ? std::to_string(shape.params) : "";
      row["target_loss"] = plan.target_loss > 0 ? number(plan.target_loss) : "";
      if (child.exit_code() == 0) {
        const RunSummary s = summarize_run(read_run_curves(metrics_path), plan.target_loss);
        row["status"] = "ok";
        row["iters"] = std::to_string(s.iterations);
        row["tokens"] = std::to_string(s.iterations * shape.tokens_per_iter);
        row["wall_s"] = number(s.wall_s);
        row["ms_per_iter"] = number(s.ms_per_iter);
        row["tokens_per_s"] = number(s.tokens_per_s);
        row["mfu"] = number(s.mfu, 4);
        row["peak_tracked_bytes"] = std::to_string(s.peak_tracked_bytes);
        row["peak_rss_bytes"] = std::to_string(s.peak_rss_bytes);
        row["train_loss"] = number(s.train_loss);
        row["val_loss"] = number(s.val_loss);
        row["target_iter"] = s.target_iter >= 0 ? std::to_string(s.target_iter) : "";
        row["target_s"] = s.target_iter >= 0 ? number(s.target_s) : "";
        progress.say(fmt::format("[{}/{}] {} done: val loss {:.4f}, {:.1f} ms/iter, peak {} in {}",
                                 index, plan.runs.size(), run.name, s.val_loss, s.ms_per_iter,
                                 format_bytes(s.peak_tracked_bytes), format_duration(s.wall_s)));
      } else {
        row["status"] = "failed";
        row["error"] = failure_message(err_log, child);
        ++outcome.failed;
        progress.say(fmt::format("[{}/{}] {} FAILED ({}): {}", index, plan.runs.size(), run.name,
                                 err_log, row["error"]));
      }
      append_results_row(csv, row);
    }
  }
  progress.say(fmt::format(
      "sweep {}{}: {} runs ran ({} resumed, {} failed), {} already recorded; results in {}",
      plan.out_dir, outcome.stopped_by.empty() ? "" : " stopped by " + outcome.stopped_by,
      outcome.ran, outcome.resumed, outcome.failed, outcome.skipped, csv));
  return outcome;
}

}  // namespace nanogpt
