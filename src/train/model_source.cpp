// Loading weights for inference from a checkpoint or a weights file.
#include "train/model_source.h"

#include <filesystem>
#include <vector>

#include "core/check.h"
#include "io/checkpoint.h"
#include "io/hf_gpt2.h"
#include "io/llmc_model.h"
#include "io/nanogpt_checkpoint.h"
#include "model/params.h"
#include "train/trainer.h"

namespace nanogpt {

ModelSource load_model_source(const std::string& init_from, const std::string& out_dir,
                              CheckpointWeights which) {
  ModelSource src;
  if (init_from == "resume") {
    std::string dir = checkpoint_dir_of(out_dir);
    src.config = read_checkpoint_config(dir);
    ParamTable table(src.config);
    src.params = Buffer<float>(static_cast<size_t>(table.total_numel()));
    // The average (train/weight_ema.h: optimizer state 'ema'), read over the trained weights
    // when asked for and kept; absent from checkpoints of runs without it.
    bool found = false;
    std::vector<StateArena> average;
    if (which == CheckpointWeights::kAverage) average.push_back({"ema", src.params.data(), &found});
    LoadedCheckpoint ck = load_checkpoint(dir, src.config, table, src.params.data(), average);
    const bool active = ck.state.contains("ema") && ck.state["ema"].is_object() &&
                        ck.state["ema"].contains("active") &&
                        ck.state["ema"]["active"].is_boolean() &&
                        ck.state["ema"]["active"].get<bool>();
    CHECK(!active || which != CheckpointWeights::kAverage || found,
          "{}/state.json says the run kept the weights' moving average, but optimizer.safetensors "
          "holds no 'ema' tensors: the checkpoint is incomplete (use --ema=False for the trained "
          "weights)",
          ck.dir);
    // An average kept but not started yet (ema_from not reached): the trained weights again.
    if (found && !active) ck = load_checkpoint(dir, src.config, table, src.params.data());
    src.average = found && active;
    src.state = ck.state;
    src.origin = ck.dir;
    return src;
  }
  CHECK(std::filesystem::exists(init_from),
        "init_from = '{}': expected 'resume' (or 'scratch' when training) or a path to an "
        "existing HF model.safetensors, llm.c model .bin or nanoGPT ckpt.pt file",
        init_from);
  if (is_torch_checkpoint_file(init_from)) {
    NanoGptCheckpoint ck = read_nanogpt_checkpoint(init_from, /*with_optimizer=*/false);
    src.config = ck.model;
    src.params = std::move(ck.params);
    src.origin = init_from;
    if (ck.config.contains("dataset") && ck.config["dataset"].is_string()) {
      src.dataset = ck.config["dataset"].get<std::string>();
    }
    return src;
  }
  bool hf = init_from.size() >= 12 && init_from.substr(init_from.size() - 12) == ".safetensors";
  LoadedModel loaded = hf ? load_hf_gpt2(init_from) : load_llmc_model(init_from);
  src.config = loaded.config;
  src.params = std::move(loaded.params);
  src.origin = init_from;
  return src;
}

}  // namespace nanogpt
