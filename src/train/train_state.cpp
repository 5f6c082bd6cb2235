// Reading a checkpoint's state.json (TrainingState) with errors that name the file and the key.
#include "train/train_state.h"

#include "core/check.h"
#include "core/json_util.h"

namespace nanogpt {

TrainingState training_state_from_json(const nlohmann::json& s, const std::string& origin) {
  CHECK(s.is_object(), "{}: expected a JSON object (a nanogpt training state), found {}", origin,
        s.type_name());
  const int64_t version = json_integer<int64_t>(s, "state_version", origin);
  CHECK(version <= kTrainingStateVersion,
        "{}: state_version {} is newer than this program understands ({}); update nanogpt", origin,
        version, kTrainingStateVersion);
  CHECK(version >= 1, "{}: state_version {} is not valid (expected 1..{})", origin, version,
        kTrainingStateVersion);
  for (const char* key : {"iter_num", "train_loader", "optimizer_steps"}) {
    CHECK(s.contains(key),
          "{}: missing iter_num / train_loader / optimizer_steps: not a nanogpt training state",
          origin);
  }
  TrainingState t;
  t.iter_num = json_integer<int64_t>(s, "iter_num", origin, 0);
  t.optimizer_steps = json_integer<int64_t>(s, "optimizer_steps", origin, 0);
  if (s.contains("optimizer")) t.optimizer = json_string(s, "optimizer", origin);
  // best_val_loss: JSON has no infinity or nan; a run that never evaluated saves 1e9.
  if (s.contains("best_val_loss") && !s["best_val_loss"].is_null()) {
    t.best_val_loss = json_number(s, "best_val_loss", origin);
  }
  t.train_loader = LoaderState::from_json(s["train_loader"], origin + " train_loader");
  if (s.contains("grad_scaler") && !s["grad_scaler"].is_null()) {
    t.grad_scaler = grad_scaler_state_from_json(s["grad_scaler"], origin + " grad_scaler");
  }
  return t;
}

TrainingState parse_training_state(std::string_view text, const std::string& origin) {
  return training_state_from_json(parse_json(text, origin), origin);
}

}  // namespace nanogpt
