// `nanogpt sweep SWEEPFILE`: a grid of training runs (experiments/sweep_file, sweep_runner).
#include <fmt/format.h>

#include "cli/commands.h"
#include "core/check.h"
#include "core/config_parse.h"
#include "experiments/sweep_file.h"
#include "experiments/sweep_runner.h"
#include "train/stop_request.h"

namespace nanogpt::cli {

std::string sweep_help() {
  return "usage: nanogpt sweep SWEEPFILE [--key=value ...]\n"
         "Runs the grid a sweep file describes (models x optims x seeds), each run a `nanogpt\n"
         "train` process in out_dir/runs/<model>.<optim>.s<seed>/, and appends one row per run\n"
         "to out_dir/results.csv. Started again, it skips recorded runs and resumes the\n"
         "unfinished one from its checkpoint; a failing run is recorded with its error.\n"
         "Sweep file keys (nanoGPT config syntax, see config/sweep_smoke.py):\n"
         "  base = 'config/x.py'        config file(s) every run starts from\n"
         "  out_dir = 'out-sweep'       where runs and results.csv go\n"
         "  seeds = 3                   seeds 1337.. (or '1,2,3')\n"
         "  target_loss = 1.5           record when val loss first reaches it (0 = none)\n"
         "  model_<name> = '--k=v ...'  a model variation ('' = unchanged)\n"
         "  optim_<name> = '--k=v ...'  an optimization variation\n"
         "  <train key> = value         applies to every run\n"
         "Options: --retry_failed=True runs failed runs again; --dry_run=True lists the runs;\n"
         "--progress=auto|live|lines: the live progress line on a terminal (auto), always (live:\n"
         "also when piped to a log) or never (lines); --progress_interval=0.5 seconds between\n"
         "its updates.\n"
         "--key=value overrides any sweep-file key. Then: nanogpt report OUT_DIR.\n";
}

int sweep_command(const Args& args) {
  CHECK(!args.empty() && args[0].rfind("--", 0) != 0,
        "usage: nanogpt sweep SWEEPFILE [--key=value ...] (e.g. nanogpt sweep "
        "config/sweep_smoke.py)");
  SweepOptions options;
  std::vector<ConfigAssignment> overrides;
  for (size_t i = 1; i < args.size(); ++i) {
    ConfigAssignment a = parse_override(args[i]);
    if (a.key == "retry_failed" || a.key == "dry_run") {
      CHECK(std::holds_alternative<bool>(a.value), "{}: {} expects True or False", a.origin,
            a.key);
      (a.key == "retry_failed" ? options.retry_failed : options.dry_run) = std::get<bool>(a.value);
    } else if (a.key == "progress") {
      const std::string* mode = std::get_if<std::string>(&a.value);
      CHECK(mode && (*mode == "auto" || *mode == "live" || *mode == "lines"),
            "{}: progress expects auto, live or lines, got {}", a.origin,
            config_value_repr(a.value));
      options.progress = *mode == "auto"   ? SweepOptions::Progress::kAuto
                         : *mode == "live" ? SweepOptions::Progress::kLive
                                           : SweepOptions::Progress::kLines;
    } else if (a.key == "progress_interval") {
      const double* s = std::get_if<double>(&a.value);
      const int64_t* i = std::get_if<int64_t>(&a.value);
      const double seconds = s ? *s : i ? static_cast<double>(*i) : -1;
      CHECK(seconds > 0 && seconds <= 3600,
            "{}: progress_interval expects seconds between 0 and 3600 (e.g. 0.5), got {}",
            a.origin, config_value_repr(a.value));
      options.progress_interval_s = seconds;
    } else {
      overrides.push_back(a);
    }
  }
  const SweepPlan plan = read_sweep_plan(args[0], overrides);
  fmt::print("sweep {}: {} models x {} optimizations x {} seeds = {} runs -> {}\n", args[0],
             plan.models.size(), plan.optims.size(), plan.seeds.size(), plan.runs.size(),
             plan.out_dir);
  std::fflush(stdout);
  const SweepOutcome outcome = run_sweep(plan, options);
  if (!outcome.stopped_by.empty()) return kStoppedExitCode;  // rerun the sweep to resume
  return outcome.failed > 0 ? 3 : 0;
}

}  // namespace nanogpt::cli
