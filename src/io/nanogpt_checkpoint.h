// nanoGPT's own checkpoint (out/ckpt.pt, a torch.save'd dict) mapped onto our model, both ways.
// Reading: `model` (nanoGPT state_dict names: "transformer." + our HF names, optionally prefixed
// "_orig_mod." by torch.compile or "module." by DDP; lm_head.weight tied to wte; the causal-mask
// buffers attn.bias / attn.masked_bias of PyTorch < 2 ignored), `model_args` (n_layer, n_head,
// n_embd, block_size, bias, vocab_size, dropout), `optimizer` (torch.optim.AdamW's state_dict in
// nanoGPT's two groups: the tensors of 2 or more dimensions with weight decay, then the others,
// each in named_parameters order), `iter_num`, `best_val_loss` and `config`. wte has vocab_size
// rows there; ours are padded to a multiple of 64 (the padded rows and their moments are zero).
// Writing: the same dict, loadable by nanoGPT's train.py (init_from='resume') and sample.py, and
// by torch.load(weights_only=True). nanoGPT's model is GPT-2 with exact (erf) GELU: a model with
// any option beyond that is refused, naming it.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/buffer.h"
#include "io/torch_checkpoint.h"
#include "io/torch_zip_writer.h"
#include "model/model_config.h"
#include "model/params.h"

namespace nanogpt {

// AdamW's state in our arena layout (ParamTable of the checkpoint's model).
struct NanoGptAdamW {
  Buffer<float> exp_avg, exp_avg_sq;  // (table.total_numel()); zero where the file had no state
  int64_t step = 0;                   // optimizer steps taken (torch's per-parameter 'step')
  bool has_moments = false;           // false: the optimizer never stepped (state was empty)
  double lr = 0, beta1 = 0.9, beta2 = 0.95, eps = 1e-8, weight_decay = 0;  // param_groups[0]
};

struct NanoGptCheckpoint {
  std::string path;
  ModelConfig model;                  // from model_args; gelu 'exact' (nanoGPT's nn.GELU)
  Buffer<float> params;               // (ParamTable(model).total_numel())
  std::optional<NanoGptAdamW> adamw;  // when read with_optimizer and the file has `optimizer`
  int64_t iter_num = 0;
  double best_val_loss = 1e9;
  nlohmann::json config = nlohmann::json::object();  // `config`'s str / bool / int / float entries
  std::vector<std::string> notes;  // what was adapted (prefixes removed, buffers ignored, ...)
};

// True when `path` starts like a torch.save file: a zip archive ("PK\3\4") or a legacy pickle.
bool is_torch_checkpoint_file(const std::string& path);

// Reads a nanoGPT ckpt.pt (see above). Throws nanogpt::Error naming the file and the key or
// tensor on anything missing, misshapen or unexpected. Nothing is sized from model_args beyond
// what the file's tensor storages can fill.
NanoGptCheckpoint read_nanogpt_checkpoint(const std::string& path, bool with_optimizer);
// The same from a checkpoint already open (e.g. from memory).
NanoGptCheckpoint nanogpt_checkpoint_from(const TorchCheckpoint& ck, bool with_optimizer);

// What write_nanogpt_checkpoint writes.
struct NanoGptCheckpointOut {
  const ModelConfig* model = nullptr;
  const ParamTable* table = nullptr;  // ParamTable(*model)
  const float* params = nullptr;      // arena laid out by table
  // AdamW moments (arena layout) and step count; null: the optimizer's state is written empty
  // (nanoGPT then starts its moments afresh), with its two groups.
  const float* exp_avg = nullptr;
  const float* exp_avg_sq = nullptr;
  int64_t adam_step = 0;
  double learning_rate = 6e-4, beta1 = 0.9, beta2 = 0.95, weight_decay = 0.1, eps = 1e-8;
  int64_t iter_num = 0;
  double best_val_loss = 1e9;
  nlohmann::json config = nlohmann::json::object();  // scalars only (nanoGPT's config dict)
};

// The names of what nanoGPT's GPT cannot express (empty when it can): options beyond GPT-2 and
// gelu = 'tanh' (nanoGPT's MLP uses exact GELU).
std::vector<std::string> beyond_nanogpt(const ModelConfig& model);

// Writes `path` atomically (io/torch_zip_writer.h). Throws naming the option for a model that
// nanoGPT cannot express, and naming the file on an I/O error. Returns the bytes written.
uint64_t write_nanogpt_checkpoint(const std::string& path, const NanoGptCheckpointOut& out,
                                  TorchZipWriterOptions options = {});

}  // namespace nanogpt
