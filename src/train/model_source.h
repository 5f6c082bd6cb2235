// Where a model's weights come from when running it (sample, export): a run's checkpoint
// (init_from = 'resume', read from out_dir/ckpt), a Hugging Face GPT-2 model.safetensors, an
// llm.c model .bin, or nanoGPT's ckpt.pt (its weights; training reads its optimizer itself).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/buffer.h"
#include "model/model_config.h"

namespace nanogpt {

struct ModelSource {
  ModelConfig config;
  Buffer<float> params;  // (ParamTable(config).total_numel())
  nlohmann::json state;  // the checkpoint's state.json; null for weights files
  std::string origin;    // what was read, for messages
  std::string dataset;   // nanoGPT's ckpt.pt: its config's dataset name (data/<dataset>), if any
};

ModelSource load_model_source(const std::string& init_from, const std::string& out_dir);

}  // namespace nanogpt
