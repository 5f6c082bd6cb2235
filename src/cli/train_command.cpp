// `nanogpt train`: parse the TrainConfig from config files and overrides, print it, run training.
#include <fmt/format.h>

#include <set>

#include "cli/commands.h"
#include "core/config.h"
#include "distributed/communicator.h"
#include "io/nanogpt_checkpoint.h"
#include "train/nanogpt_run.h"
#include "train/stop_request.h"
#include "train/train_config.h"
#include "train/trainer.h"
#if NANOGPT_WITH_CUDA
#include "gpu/cuda_training.h"
#endif

namespace nanogpt::cli {

std::string train_help() {
  return "usage: nanogpt train [config files...] [--key=value ...]\n"
         "Trains a GPT like nanoGPT's train.py (same keys). Writes out_dir/ckpt (checkpoint) and\n"
         "out_dir/metrics.jsonl. Keys:\n" +
         format_keys_help(describe_keys<TrainConfig>());
}

int train_command(const Args& args) {
  TrainConfig config;
  std::vector<ConfigAssignment> assignments = parse_command_line(args);
  apply_assignments(config, assignments);
  // Continuing nanoGPT's run: the train.py keys we share come from its saved config unless given.
  std::vector<ConfigAssignment> taken;
  if (config.init_from != "resume" && config.init_from != "scratch" &&
      is_torch_checkpoint_file(config.init_from)) {
    std::set<std::string> given;
    for (const auto& a : assignments) given.insert(a.key);
    taken = nanogpt_config_assignments(config.init_from, given);
    apply_assignments(config, taken);
  }
  config.validate();  // before printing: a bad key's message should come first
  // 'auto' is saved resolved in the checkpoint: on a GPU for the GPU found, else for this CPU.
  std::string auto_note;
#if NANOGPT_WITH_CUDA
  if (config.device != "cpu") auto_note = resolve_cuda_auto_dtype(config);
#endif
  if (auto_note.empty()) auto_note = config.resolve_auto_dtype();
  // Under mpirun: one rank of a data-parallel job (a plain run is a world of one, without MPI).
  std::unique_ptr<Communicator> comm = make_communicator(config.comm_timeout);
  try {
    if (comm->rank() == 0) {
      if (!auto_note.empty()) fmt::print("{}\n", auto_note);
      if (!taken.empty()) {
        std::string keys;
        for (const auto& a : taken) {
          keys +=
              fmt::format("{}{} = {}", keys.empty() ? "" : ", ", a.key, config_value_repr(a.value));
        }
        fmt::print("from {}'s saved config (give a key to override it): {}\n", config.init_from,
                   keys);
      }
      fmt::print("effective config:\n{}\n", format_config(config));
      std::fflush(stdout);
    }
    TrainOptions options;
    for (const auto& a : assignments) options.explicit_keys.insert(a.key);
    options.comm = comm.get();
    TrainResult result;
    if (config.device == "cpu") {
      result = run_training(config, options);
    } else {
#if NANOGPT_WITH_CUDA
      result = run_training_on_cuda(config, options);  // the one trainer on the GPU
#else
      fail(
          "--device={}: this nanogpt was built without the CUDA backend (no nvcc was found when "
          "it was built); build it on a machine with a CUDA toolkit (docs/guide/gpu.md), or train "
          "with --device=cpu",
          config.device);
#endif
    }
    if (!result.stopped_by.empty()) return kStoppedExitCode;  // checkpointed: resume to go on
  } catch (const std::exception& e) {
    if (comm->size() == 1) throw;
    // One rank failing ends the whole job at once (its peers would otherwise wait for it).
    const std::string what = e.what();
    if (what.rfind("rank ", 0) == 0) {  // already names the rank
      std::fprintf(stderr, "error: %s\n", what.c_str());
    } else {
      std::fprintf(stderr, "error: rank %d of %d: %s\n", comm->rank(), comm->size(), what.c_str());
    }
    std::fflush(stderr);
    comm->abort_job(1);
    return 1;
  }
  return 0;
}

}  // namespace nanogpt::cli
