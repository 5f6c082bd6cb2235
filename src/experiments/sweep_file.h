// A sweep file: nanoGPT config syntax (`name = literal` lines) describing a grid of training runs.
//   base = 'x.py'                 config file(s) every run starts from (space-separated; looked
//                                  up beside the sweep file, then in the current directory)
//   out_dir = 'out-sweep'          runs go to out_dir/runs/<name>/, rows to out_dir/results.csv
//   seeds = 3                      3 seeds (1337, 1338, 1339), or '1,2,5' for exactly those
//   target_loss = 1.5              time-to-target threshold on val loss (0 = none)
//   model_<name> = '--k=v ...'     a model variation ('' = the base); listed order is kept
//   optim_<name> = '--k=v ...'     an optimization variation
//   <any train key> = value        applies to every run (e.g. max_iters = 200)
// The grid is models x optims x seeds; each run is `nanogpt train` with, in order, the base files,
// the common keys, the model's keys, the optim's keys, --seed and --out_dir.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config_parse.h"

namespace nanogpt {

struct SweepVariation {
  std::string name;
  std::vector<ConfigAssignment> overrides;  // train keys of this variation
};

struct SweepRun {
  std::string name;  // "<model>.<optim>.s<seed>"
  std::string model, optim;
  int64_t seed = 0;
  std::vector<std::string> train_args;  // arguments of `nanogpt train` (without --out_dir)
  std::string run_dir;                  // out_dir/runs/<name>
};

struct SweepPlan {
  std::string sweep_file;
  std::vector<std::string> base_files;  // as resolved (existing paths)
  std::string out_dir;
  std::vector<int64_t> seeds;
  double target_loss = 0;
  std::vector<ConfigAssignment> common;  // train keys for every run
  std::vector<SweepVariation> models, optims;
  std::vector<SweepRun> runs;  // the product, models outermost, seeds innermost
};

// Reads a sweep file and applies command-line overrides (sweep keys or common train keys). Every
// run's train keys are checked against `nanogpt train`'s keys here, so a typo fails before
// anything runs (values are checked by the trainer, so a run with a bad value is recorded as
// failed). Throws nanogpt::Error naming the file, line or key.
SweepPlan read_sweep_plan(const std::string& sweep_file,
                          const std::vector<ConfigAssignment>& overrides = {});

// "--key=value" text of an assignment that parse_override reads back as the same value.
std::string override_arg(const ConfigAssignment& a);

}  // namespace nanogpt
