// Continuing a nanoGPT run here, and handing ours back: the train.py config keys both programs
// share, taken from a ckpt.pt's saved config where the command line did not set them; AdamW's
// moments and step put into our optimizer (whole, or one ZeRO-1 shard); what cannot be carried
// across said in the log; and our run's config written as nanoGPT's config dict on export.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "core/config_parse.h"
#include "io/nanogpt_checkpoint.h"
#include "optim/optimizer.h"

namespace nanogpt {

// nanoGPT train.py's keys that mean the same here (hyperparameters, batch shape, evaluation and
// the dataset's name). Not taken: model keys (model_args decide those), device, dtype, compile,
// backend, wandb_*, out_dir, init_from, eval_only.
const std::vector<std::string>& nanogpt_shared_train_keys();

// Assignments (origin "<path>:config['key']") for the shared keys in the ckpt.pt's saved config
// that are not in `explicit_keys`. Values of the wrong type get a named error.
std::vector<ConfigAssignment> nanogpt_config_assignments(
    const std::string& ckpt_path, const std::set<std::string>& explicit_keys);

// A trainer starting from nanoGPT's ckpt.pt at `path`: `model` becomes its model_args (dropout
// stays as configured, as on nanoGPT's resume) and `params` its weights; the AdamW state and the
// iteration stay in the returned checkpoint until the trainer has an optimizer to take them.
std::unique_ptr<NanoGptCheckpoint> start_from_nanogpt(const std::string& path, ModelConfig& model,
                                                      Buffer<float>& params);

// Puts the checkpoint's AdamW moments into `optimizer`'s "m" / "v" arenas for arena elements
// [begin, end) (the whole arena, or a ZeRO-1 rank's shard) and its step count into steps().
// Returns the log lines: what was taken, what was not (the data position and the RNG streams
// cannot be carried over; an optimizer other than AdamW starts afresh).
std::vector<std::string> continue_nanogpt_run(const NanoGptCheckpoint& ckpt, Optimizer& optimizer,
                                              int64_t begin, int64_t end, uint64_t seed);

// `nanogpt export --format=nanogpt`: the model of `init_from` ('resume': out_dir's checkpoint,
// with its AdamW moments, step, iter_num and best val loss when it was trained with AdamW; or a
// weights file, then with an empty optimizer state) written to `output` as nanoGPT's ckpt.pt.
// Returns a one-line summary.
std::string export_nanogpt_checkpoint(const std::string& init_from, const std::string& out_dir,
                                      const std::string& output);

// The pieces of continue_nanogpt_run's log, for a trainer with its own optimizer (the GPU's):
// what became of the AdamW state for a run with `optimizer` (", AdamW's moments (step N)", ...),
// and the two lines (what was taken, what was not carried over).
std::string nanogpt_adamw_outcome(const NanoGptCheckpoint& ckpt, const std::string& optimizer);
std::vector<std::string> nanogpt_continuation_log(const NanoGptCheckpoint& ckpt,
                                                  const std::string& optimizer_outcome,
                                                  uint64_t seed);

// nanoGPT's config dict from our run's config (state.json's "config"): the shared keys, the
// model keys, dataset, and nanoGPT's own keys at values that describe this run.
nlohmann::json nanogpt_config_from(const nlohmann::json& run_config);

}  // namespace nanogpt
