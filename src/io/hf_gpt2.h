// Hugging Face GPT-2 interop: config.json <-> ModelConfig, and model.safetensors with HF names and
// layout (Conv1D weights stored (in, out), i.e. transposed relative to our (out, in)) <-> our flat
// parameter arena. Used by checkpoints (model.safetensors is loadable by transformers) and by
// load_hf_gpt2 for pretrained weights.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/buffer.h"
#include "io/file_util.h"
#include "io/safetensors.h"
#include "model/params.h"

namespace nanogpt {

// HF GPT2Config JSON (model_type gpt2, n_layer, n_head, n_embd, n_positions, n_ctx, vocab_size =
// the PADDED vocab (the rows of wte we write), activation_function gelu_new|gelu,
// layer_norm_epsilon 1e-5, tie_word_embeddings true, ...) plus "nanogpt_model_config": every
// ModelConfig key, so our own files round-trip exactly (true vocab size, bias, gelu, dropout).
nlohmann::ordered_json hf_config_json(const ModelConfig& config);

// ModelConfig from a config.json object (ours or Hugging Face's). `path` is for messages.
// With "nanogpt_model_config" present, that is used as is; otherwise HF keys are mapped
// (n_positions -> block_size, activation_function gelu_new/gelu_pytorch_tanh -> tanh,
// gelu -> exact) and bias = true (GPT-2 has biases).
ModelConfig model_config_from_hf_json(const nlohmann::json& json, const std::string& path);
// The same from config.json's text (throws naming `path` when it is not valid JSON).
ModelConfig parse_hf_config(std::string_view text, const std::string& path);

// Writes `params` (arena laid out by `table`) as an HF GPT-2 model.safetensors: HF names, Conv1D
// weights transposed to (in, out), wte with all padded rows, zero biases when config.bias is false
// (HF's GPT-2 always has them), metadata {"format": "pt"} plus `metadata`.
FileDigest write_hf_safetensors(const std::string& path, const ModelConfig& config,
                                const ParamTable& table, const float* params,
                                const std::map<std::string, std::string>& metadata = {});

// Fills `params` (arena laid out by `table`, built from `config`) from an HF GPT-2 file. Accepts
// names with or without the "transformer." prefix; transposes Conv1D weights; wte may have between
// vocab_size and padded_vocab_size rows (missing rows become zeros); ignores attn.bias /
// attn.masked_bias buffers, lm_head.weight (tied) and, when config.bias is false, bias tensors.
// Throws naming the file and tensor on a missing tensor, a wrong shape or an unexpected tensor.
void read_hf_params(const SafeTensorsReader& file, const ModelConfig& config,
                    const ParamTable& table, float* params);
// The same for arena elements [begin, end) only (e.g. one rank's ZeRO-1 shard), into out
// (end - begin floats; arena padding and wte rows the file lacks become zeros). Reads just those
// elements from the (mapped) file: Conv1D weights stored (in, out) are read row segment by row
// segment, never whole.
void read_hf_params_range(const SafeTensorsReader& file, const ModelConfig& config,
                          const ParamTable& table, int64_t begin, int64_t end, float* out);
// The checks of read_hf_params without reading: every parameter of `table` is in the file with a
// float dtype and the expected shape, and nothing unexpected is. Returns our name -> file's name.
std::map<std::string, std::string> check_hf_params(const SafeTensorsReader& file,
                                                   const ModelConfig& config,
                                                   const ParamTable& table);

struct LoadedModel {
  ModelConfig config;
  Buffer<float> params;  // (table.total_numel()) laid out by ParamTable(config)
};

// Loads a Hugging Face GPT-2 (or our own exported) model.safetensors. config_path: its
// config.json; "" = look for config.json beside the model file, and if there is none infer the
// shape from the tensors (n_head = n_embd / 64 as in every GPT-2 size, gelu tanh, bias true).
LoadedModel load_hf_gpt2(const std::string& model_path, const std::string& config_path = "");

}  // namespace nanogpt
