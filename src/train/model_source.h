// Where a model's weights come from when running it (sample, export): a run's checkpoint
// (init_from = 'resume', read from out_dir/ckpt), a Hugging Face GPT-2 model.safetensors, an
// llm.c model .bin, or nanoGPT's ckpt.pt (its weights; training reads its optimizer itself).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/buffer.h"
#include "model/model_config.h"

namespace nanogpt {

// A run's checkpoint that keeps the weights' moving average (ema_decay): which weights to load.
enum class CheckpointWeights {
  kTrained,  // model.safetensors: the weights being trained (what a resume continues)
  kAverage,  // the average, where the checkpoint keeps an active one (what its evaluations used)
};

struct ModelSource {
  ModelConfig config;
  Buffer<float> params;  // (ParamTable(config).total_numel())
  nlohmann::json state;  // the checkpoint's state.json; null for weights files
  std::string origin;    // what was read, for messages
  std::string dataset;   // nanoGPT's ckpt.pt: its config's dataset name (data/<dataset>), if any
  bool average = false;  // params hold the checkpoint's moving average of the weights
};

// which: for a run's checkpoint (init_from 'resume') that keeps an active moving average, whether
// params get it or the trained weights; weights files have one set of weights.
ModelSource load_model_source(const std::string& init_from, const std::string& out_dir,
                              CheckpointWeights which = CheckpointWeights::kTrained);

}  // namespace nanogpt
