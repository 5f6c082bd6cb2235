// nanoGPT's run config and optimizer state carried across (see nanogpt_run.h).
#include "train/nanogpt_run.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/check.h"
#include "io/checkpoint.h"
#include "io/torch_checkpoint.h"
#include "kernels/backend.h"
#include "train/model_source.h"
#include "train/train_state.h"
#include "train/trainer.h"

namespace nanogpt {

const std::vector<std::string>& nanogpt_shared_train_keys() {
  static const std::vector<std::string> keys = {"dataset",
                                                "eval_interval",
                                                "log_interval",
                                                "eval_iters",
                                                "always_save_checkpoint",
                                                "gradient_accumulation_steps",
                                                "batch_size",
                                                "dropout",
                                                "learning_rate",
                                                "max_iters",
                                                "weight_decay",
                                                "beta1",
                                                "beta2",
                                                "grad_clip",
                                                "decay_lr",
                                                "warmup_iters",
                                                "lr_decay_iters",
                                                "min_lr"};
  return keys;
}

std::vector<ConfigAssignment> nanogpt_config_assignments(
    const std::string& ckpt_path, const std::set<std::string>& explicit_keys) {
  const TorchCheckpoint ck(ckpt_path);
  const PickleValue* config = ck.root().is_dict() ? ck.root().find("config") : nullptr;
  std::vector<ConfigAssignment> out;
  if (config == nullptr || !config->is_dict()) return out;
  for (const std::string& key : nanogpt_shared_train_keys()) {
    if (explicit_keys.count(key)) continue;
    const PickleValue* v = config->find(key);
    if (v == nullptr) continue;
    ConfigAssignment a;
    a.key = key;
    a.origin = fmt::format("{}:config['{}']", ckpt_path, key);
    switch (v->kind()) {
      case PickleValue::Kind::kBool:
        a.value = v->as_bool();
        break;
      case PickleValue::Kind::kInt:
        a.value = v->as_int();
        break;
      case PickleValue::Kind::kFloat:
        a.value = v->as_float();
        break;
      case PickleValue::Kind::kString:
        a.value = v->as_string();
        break;
      default:
        fail("{}: config['{}'] is {}, expected a bool, number or string like train.py's", ckpt_path,
             key, v->describe());
    }
    out.push_back(std::move(a));
  }
  return out;
}

std::vector<std::string> nanogpt_continuation_log(const NanoGptCheckpoint& ckpt,
                                                  const std::string& optimizer_outcome,
                                                  uint64_t seed) {
  std::string notes;
  for (const auto& n : ckpt.notes) notes += "; " + n;
  return {fmt::format("continuing nanoGPT's run {} at iteration {} (best val loss {:.4f}): "
                      "weights{} taken{}",
                      ckpt.path, ckpt.iter_num, ckpt.best_val_loss, optimizer_outcome, notes),
          fmt::format("not carried over from {}: the data position and the RNG streams (nanoGPT "
                      "draws its batches and dropout from torch's generator; this run draws them "
                      "afresh from seed {})",
                      ckpt.path, seed)};
}

std::unique_ptr<NanoGptCheckpoint> start_from_nanogpt(const std::string& path, ModelConfig& model,
                                                      Buffer<float>& params) {
  auto ckpt =
      std::make_unique<NanoGptCheckpoint>(read_nanogpt_checkpoint(path, /*with_optimizer=*/true));
  const ModelConfig configured = model;
  model = ckpt->model;
  model.take_dropout_from(configured);
  params = std::move(ckpt->params);
  return ckpt;
}

std::string nanogpt_adamw_outcome(const NanoGptCheckpoint& ckpt, const std::string& optimizer) {
  if (!ckpt.adamw) return " (no optimizer state in the file: AdamW starts afresh)";
  if (optimizer != "adamw") {
    return fmt::format(
        " (its AdamW state is not used: this run's optimizer is '{}', which "
        "starts afresh)",
        optimizer);
  }
  return ckpt.adamw->has_moments ? fmt::format(", AdamW's moments (step {})", ckpt.adamw->step)
                                 : std::string(", AdamW (no moments yet: it had not stepped)");
}

std::vector<std::string> continue_nanogpt_run(const NanoGptCheckpoint& ckpt, Optimizer& optimizer,
                                              int64_t begin, int64_t end, uint64_t seed) {
  if (ckpt.adamw && optimizer.name() == "adamw") {
    const NanoGptAdamW& a = *ckpt.adamw;
    for (auto& t : optimizer.state_tensors()) {
      CHECK(t.name == "m" || t.name == "v", "continuing {}: unexpected AdamW state '{}'", ckpt.path,
            t.name);
      CHECK(t.numel == end - begin, "continuing {}: AdamW state '{}' holds {} elements, not {}",
            ckpt.path, t.name, t.numel, end - begin);
      const float* from = t.name == "m" ? a.exp_avg.data() : a.exp_avg_sq.data();
      // (the state lives in the optimizer's backend's memory: a GPU's, or the host's)
      optimizer.backend().upload(t.data, from + begin,
                                 static_cast<size_t>(end - begin) * sizeof(float));
    }
    optimizer.set_steps(a.step);
  }
  return nanogpt_continuation_log(ckpt, nanogpt_adamw_outcome(ckpt, optimizer.name()), seed);
}

nlohmann::json nanogpt_config_from(const nlohmann::json& run_config) {
  nlohmann::json out = nlohmann::json::object();
  auto copy = [&](const std::string& key) {
    if (run_config.contains(key)) out[key] = run_config[key];
  };
  copy("out_dir");
  for (const std::string& key : nanogpt_shared_train_keys()) copy(key);
  for (const char* key : {"n_layer", "n_head", "n_embd", "block_size", "bias"}) copy(key);
  copy("dtype");
  out["init_from"] = "resume";
  out["eval_only"] = false;
  out["wandb_log"] = false;
  out["wandb_project"] = "owt";
  out["wandb_run_name"] = "gpt2";
  out["backend"] = "nccl";
  out["device"] = "cpu";
  out["compile"] = false;
  return out;
}

std::string export_nanogpt_checkpoint(const std::string& init_from, const std::string& out_dir,
                                      const std::string& output) {
  ModelSource src = load_model_source(init_from, out_dir);
  // Refused before anything is read further or written.
  const std::vector<std::string> extra = beyond_nanogpt(src.config);
  CHECK(extra.empty(),
        "cannot export {} as nanoGPT's ckpt.pt: the model has {}, which nanoGPT's GPT (GPT-2 "
        "with exact GELU) cannot express",
        src.origin, fmt::join(extra, ", "));
  const ParamTable table(src.config);
  NanoGptCheckpointOut out;
  out.model = &src.config;
  out.table = &table;
  out.params = src.params.data();
  Buffer<float> m, v;
  std::string optimizer_note = "no optimizer state (nanoGPT starts AdamW afresh)";
  if (init_from == "resume") {
    const TrainingState s = training_state_from_json(src.state, src.origin + "/state.json");
    out.iter_num = s.iter_num;
    out.best_val_loss = s.best_val_loss;
    const nlohmann::json& run =
        src.state.contains("config") ? src.state["config"] : nlohmann::json::object();
    auto number = [&](const char* key, double fallback) {
      return run.contains(key) && run[key].is_number() ? run[key].get<double>() : fallback;
    };
    out.learning_rate = number("learning_rate", out.learning_rate);
    out.beta1 = number("beta1", out.beta1);
    out.beta2 = number("beta2", out.beta2);
    out.weight_decay = number("weight_decay", out.weight_decay);
    out.config = nanogpt_config_from(run);
    if (s.optimizer == "adamw") {
      m = Buffer<float>(static_cast<size_t>(table.total_numel()));
      v = Buffer<float>(static_cast<size_t>(table.total_numel()));
      load_checkpoint(checkpoint_dir_of(out_dir), src.config, table, src.params.data(),
                      {{"m", m.data()}, {"v", v.data()}});
      out.exp_avg = m.data();
      out.exp_avg_sq = v.data();
      out.adam_step = s.optimizer_steps;
      optimizer_note = fmt::format("AdamW's moments at step {}", s.optimizer_steps);
    } else {
      optimizer_note = fmt::format("no optimizer state: the run used '{}', which nanoGPT lacks",
                                   s.optimizer.empty() ? "?" : s.optimizer);
    }
  } else {
    out.config = nlohmann::json::object();
    if (!src.dataset.empty()) out.config["dataset"] = src.dataset;
  }
  const uint64_t bytes = write_nanogpt_checkpoint(output, out);
  return fmt::format("wrote {} (nanoGPT's ckpt.pt, {:.1f} MB) from {}: weights, {}, iter_num {}",
                     output, static_cast<double>(bytes) / 1e6, src.origin, optimizer_note,
                     out.iter_num);
}

}  // namespace nanogpt
