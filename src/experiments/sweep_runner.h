// Runs a sweep plan: each run as its own `nanogpt train` process in out_dir/runs/<name>/, one row
// per finished or failed run appended to out_dir/results.csv, runs already recorded skipped, an
// unfinished run (one with a checkpoint) resumed from it, live progress on the terminal.
#pragma once

#include <cstdint>
#include <string>

#include "experiments/sweep_file.h"

namespace nanogpt {

struct SweepOptions {
  bool retry_failed = false;  // run again runs recorded as failed (their row is superseded)
  bool dry_run = false;       // print the runs and their commands, run nothing
  // The live progress line: kAuto when stderr is a terminal, kLive always (a log that keeps the
  // carriage returns), kLines never (only the started/done lines).
  enum class Progress { kAuto, kLive, kLines };
  Progress progress = Progress::kAuto;
  double progress_interval_s = 0.5;  // seconds between live updates
};

struct SweepOutcome {
  int64_t ran = 0, skipped = 0, failed = 0, resumed = 0;
  // The signal that stopped the sweep ("SIGTERM", ...; "" if none): the run it was in stopped at
  // a step boundary with its checkpoint (no row for it), and a rerun of the sweep resumes it.
  std::string stopped_by;
};

SweepOutcome run_sweep(const SweepPlan& plan, const SweepOptions& options);

// out_dir/results.csv
std::string results_path(const std::string& out_dir);

}  // namespace nanogpt
