// TrainingState: what a checkpoint's state.json holds besides the tensors (iteration, best val
// loss, optimizer name and step count, the training loader's position, float16's loss scaler), and its validated reading.
// The trainer writes it with training_state_json and reads it back on resume.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "data/loader.h"
#include "optim/grad_scaler.h"

namespace nanogpt {

inline constexpr int kTrainingStateVersion = 1;

struct TrainingState {
  int64_t iter_num = 0;
  double best_val_loss = 1e9;
  std::string optimizer;  // "" when state.json does not name one (older files)
  int64_t optimizer_steps = 0;
  LoaderState train_loader;
  std::optional<GradScalerState> grad_scaler;  // float16 runs' loss scaler ("grad_scaler")
};

// Reads state.json's object; throws nanogpt::Error naming `origin` and the key on anything
// missing, of the wrong type or out of range. Keys it does not need (config, data_dir,
// tokenizer_meta) are not checked here.
TrainingState training_state_from_json(const nlohmann::json& state, const std::string& origin);
// The same from state.json's text.
TrainingState parse_training_state(std::string_view text, const std::string& origin);

}  // namespace nanogpt
