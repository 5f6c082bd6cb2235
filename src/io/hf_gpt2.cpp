// HF GPT-2 config.json and model.safetensors <-> ModelConfig and our parameter arena.
#include "io/hf_gpt2.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <set>

#include "core/check.h"
#include "core/config.h"
#include "core/json_util.h"
#include "core/transpose.h"

namespace nanogpt {
namespace {

constexpr const char* kPrefix = "transformer.";

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Tensors an HF GPT-2 file may hold that are not parameters of ours.
bool is_ignorable(const std::string& name, const ModelConfig& config) {
  if (ends_with(name, ".attn.bias") || ends_with(name, ".attn.masked_bias")) return true;
  if (name == "lm_head.weight") return true;
  if (!config.bias && ends_with(name, ".bias")) return true;
  return false;
}

std::string strip_prefix(const std::string& name) {
  const std::string p = kPrefix;
  return name.compare(0, p.size(), p) == 0 ? name.substr(p.size()) : name;
}

// config.validate() with the file named in the error.
void validate_from(const ModelConfig& config, const std::string& path) {
  try {
    config.validate();
  } catch (const Error& e) {
    fail("'{}': {}", path, e.what());
  }
}

}  // namespace

nlohmann::ordered_json hf_config_json(const ModelConfig& config) {
  nlohmann::ordered_json ours = nlohmann::ordered_json::object();
  ModelConfig copy = config;
  copy.visit([&](const char* key, auto& field, const char*) { ours[key] = field; });
  nlohmann::ordered_json j = {
      {"architectures", {"GPT2LMHeadModel"}},
      {"model_type", "gpt2"},
      {"n_layer", config.n_layer},
      {"n_head", config.n_head},
      {"n_embd", config.n_embd},
      {"n_positions", config.block_size},
      {"n_ctx", config.block_size},
      {"vocab_size", config.padded_vocab_size()},
      {"activation_function", config.gelu == "exact" ? "gelu" : "gelu_new"},
      {"layer_norm_epsilon", 1e-5},
      {"initializer_range", 0.02},
      {"resid_pdrop", config.dropout},
      {"embd_pdrop", config.dropout},
      {"attn_pdrop", config.dropout},
      {"tie_word_embeddings", true},
      {"bos_token_id", 50256},
      {"eos_token_id", 50256},
      {"torch_dtype", "float32"},
      {"nanogpt_model_config", ours},
  };
  return j;
}

ModelConfig model_config_from_hf_json(const nlohmann::json& j, const std::string& path) {
  CHECK(j.is_object(), "'{}': expected a JSON object", path);
  ModelConfig c;
  if (j.contains("nanogpt_model_config")) {
    const auto& ours = j.at("nanogpt_model_config");
    const std::string origin = fmt::format("'{}': nanogpt_model_config", path);
    CHECK(ours.is_object(), "{} must be an object of ModelConfig keys, found {}", origin,
          ours.type_name());
    // GPT-2's keys are always written; the architecture options came later, and a config
    // without them (an older checkpoint) is GPT-2: they keep their defaults.
    for (const char* key :
         {"n_layer", "n_head", "n_embd", "block_size", "vocab_size", "bias", "dropout", "gelu"}) {
      CHECK(ours.contains(key), "'{}': nanogpt_model_config lacks '{}'", path, key);
    }
    config_from_json(c, ours, origin);  // type and range checks per key
    validate_from(c, path);
    return c;
  }
  const int kMax = std::numeric_limits<int>::max();
  const std::string origin = "'" + path + "'";
  c.n_layer = json_integer<int>(j, "n_layer", origin, 1, kMax);
  c.n_head = json_integer<int>(j, "n_head", origin, 1, kMax);
  c.n_embd = json_integer<int>(j, "n_embd", origin, 1, kMax);
  c.block_size = json_integer<int>(j, "n_positions", origin, 1, kMax);
  c.vocab_size = json_integer<int>(j, "vocab_size", origin, 1, kMax);
  c.bias = true;
  c.dropout = 0.0;
  const std::string act = j.contains("activation_function")
                              ? json_string(j, "activation_function", origin)
                              : "gelu_new";
  if (act == "gelu_new" || act == "gelu_pytorch_tanh" || act == "gelu_fast") {
    c.gelu = "tanh";
  } else if (act == "gelu") {
    c.gelu = "exact";
  } else {
    fail("'{}': activation_function '{}' is not supported (expected gelu_new or gelu)", path, act);
  }
  if (j.contains("layer_norm_epsilon")) {
    const double eps = json_number(j, "layer_norm_epsilon", origin);
    CHECK(std::abs(eps - 1e-5) < 1e-9,
          "'{}': layer_norm_epsilon {} is not supported (our "
          "LayerNorm uses 1e-5)",
          path, eps);
  }
  validate_from(c, path);
  return c;
}

ModelConfig parse_hf_config(std::string_view text, const std::string& path) {
  return model_config_from_hf_json(parse_json(text, path), path);
}

FileDigest write_hf_safetensors(const std::string& path, const ModelConfig& config,
                                const ParamTable& table, const float* params,
                                const std::map<std::string, std::string>& metadata) {
  SafeTensorsWriter w;
  std::map<std::string, std::string> meta = metadata;
  meta["format"] = "pt";
  w.set_metadata(meta);
  for (const auto& s : table.specs()) {
    const float* data = params + s.offset;
    if (s.transposed_in_hf) {
      w.add_transposed(s.name, s.shape[0], s.shape[1], data);  // ours (out, in) -> HF (in, out)
    } else {
      w.add(s.name, s.shape, data);
    }
    // GPT-2 in transformers always has biases: write zeros after each weight that lacks one.
    if (!config.bias && ends_with(s.name, ".weight") && s.name != "wte.weight" &&
        s.name != "wpe.weight") {
      const std::string bias = s.name.substr(0, s.name.size() - 6) + "bias";
      const int64_t n = s.transposed_in_hf ? s.shape[0] : s.shape.back();
      w.add_zeros(bias, {n});
    }
  }
  return w.write(path);
}

std::map<std::string, std::string> check_hf_params(const SafeTensorsReader& file,
                                                   const ModelConfig& config,
                                                   const ParamTable& table) {
  // Map our names to the file's (with or without "transformer.").
  std::map<std::string, std::string> by_ours;
  for (const auto& [name, info] : file.tensors()) {
    const std::string ours = strip_prefix(name);
    CHECK(by_ours.emplace(ours, name).second,
          "'{}': tensor '{}' appears twice (with and without "
          "the 'transformer.' prefix)",
          file.path(), ours);
  }
  std::map<std::string, std::string> matched;
  for (const auto& s : table.specs()) {
    auto it = by_ours.find(s.name);
    CHECK(it != by_ours.end(),
          "'{}': missing tensor '{}' (model config: n_layer={}, bias={}); "
          "is this a GPT-2 file matching the config?",
          file.path(), s.name, config.n_layer, config.bias ? "True" : "False");
    const std::string& fname = it->second;
    const auto& info = file.info(fname);
    CHECK(info.dtype == "F32" || info.dtype == "BF16" || info.dtype == "F16",
          "'{}': tensor '{}' has dtype {}; expected F32, BF16 or F16", file.path(), fname,
          info.dtype);
    if (s.name == "wte.weight") {
      const int64_t C = s.shape[1], Vp = s.shape[0];
      CHECK(info.shape.size() == 2 && info.shape[1] == C && info.shape[0] >= config.vocab_size &&
                info.shape[0] <= Vp,
            "'{}': tensor '{}' has shape {} but the model expects [{} .. {}, {}] (vocab_size {} "
            "padded to {}, n_embd {})",
            file.path(), fname, shape_string(info.shape), config.vocab_size, Vp, C,
            config.vocab_size, Vp, C);
    } else {
      const std::vector<int64_t> expected =
          s.transposed_in_hf ? std::vector<int64_t>{s.shape[1], s.shape[0]} : s.shape;
      CHECK(info.shape == expected,
            "'{}': tensor '{}' has shape {} but the model expects {} "
            "(does the model config match the file?)",
            file.path(), fname, shape_string(info.shape), shape_string(expected));
    }
    matched.emplace(s.name, fname);
  }
  for (const auto& [ours, name] : by_ours) {
    CHECK(matched.count(ours) || is_ignorable(ours, config),
          "'{}': unexpected tensor '{}' for a model with n_layer={}, bias={} (does the config "
          "match the file?)",
          file.path(), name, config.n_layer, config.bias ? "True" : "False");
  }
  return matched;
}

void read_hf_params(const SafeTensorsReader& file, const ModelConfig& config,
                    const ParamTable& table, float* params) {
  const std::map<std::string, std::string> matched = check_hf_params(file, config, table);
  std::vector<float> tmp;
  for (const auto& s : table.specs()) {
    const std::string& fname = matched.at(s.name);
    float* dst = params + s.offset;
    if (s.name == "wte.weight") {
      const auto& info = file.info(fname);
      const int64_t C = s.shape[1], Vp = s.shape[0];
      file.read_f32(fname, info.shape, dst);
      std::fill(dst + info.shape[0] * C, dst + Vp * C, 0.0f);
    } else if (s.transposed_in_hf) {
      const int64_t out = s.shape[0], in = s.shape[1];
      tmp.resize(static_cast<size_t>(s.numel));
      file.read_f32(fname, {in, out}, tmp.data());         // HF (in, out)
      transpose_tiled(dst, in, tmp.data(), out, in, out);  // -> ours (out, in)
    } else {
      file.read_f32(fname, s.shape, dst);
    }
  }
}

void read_hf_params_range(const SafeTensorsReader& file, const ModelConfig& config,
                          const ParamTable& table, int64_t begin, int64_t end, float* out) {
  CHECK(0 <= begin && begin <= end && end <= table.total_numel(),
        "read_hf_params_range: [{}, {}) is not inside the arena of {} elements", begin, end,
        table.total_numel());
  const std::map<std::string, std::string> matched = check_hf_params(file, config, table);
  std::fill(out, out + (end - begin), 0.0f);
  std::vector<float> row;
  for (const auto& s : table.specs()) {
    // This tensor's elements [lo, hi) (our layout) inside the range, written at dst[lo..hi).
    const int64_t lo = std::clamp<int64_t>(begin - s.offset, 0, s.numel);
    const int64_t hi = std::clamp<int64_t>(end - s.offset, 0, s.numel);
    if (lo >= hi) continue;
    float* dst = out + (s.offset - begin);
    const std::string& fname = matched.at(s.name);
    const SafeTensorInfo& info = file.info(fname);
    if (s.name == "wte.weight") {
      const int64_t stored = info.shape[0] * info.shape[1];  // rows beyond stay zero
      if (lo < stored)
        file.read_f32_elements(fname, info.shape, lo, std::min(hi, stored) - lo, dst + lo);
    } else if (s.transposed_in_hf) {
      // Ours (out, in): element e = o * in + i; the file's (in, out) holds it at i * out + o. Our
      // rows o0..o1 are one contiguous segment of each of the file's rows.
      const int64_t out_dim = s.shape[0], in_dim = s.shape[1];
      const int64_t o0 = lo / in_dim, o1 = (hi - 1) / in_dim;
      row.resize(static_cast<size_t>(o1 - o0 + 1));
      for (int64_t i = 0; i < in_dim; ++i) {
        file.read_f32_elements(fname, {in_dim, out_dim}, i * out_dim + o0, o1 - o0 + 1, row.data());
        for (int64_t o = o0; o <= o1; ++o) {
          const int64_t e = o * in_dim + i;
          if (e >= lo && e < hi) dst[e] = row[static_cast<size_t>(o - o0)];
        }
      }
    } else {
      file.read_f32_elements(fname, s.shape, lo, hi - lo, dst + lo);
    }
  }
}

LoadedModel load_hf_gpt2(const std::string& model_path, const std::string& config_path) {
  namespace fs = std::filesystem;
  SafeTensorsReader file(model_path);
  std::string cfg_path = config_path;
  if (cfg_path.empty()) {
    fs::path beside = fs::path(model_path).parent_path() / "config.json";
    if (fs::exists(beside)) cfg_path = beside.string();
  }
  ModelConfig config;
  if (!cfg_path.empty()) {
    config = parse_hf_config(read_text_file(cfg_path), cfg_path);
  } else {  // infer from the tensors
    auto find = [&](const std::string& n) -> const SafeTensorInfo& {
      return file.contains(n) ? file.info(n) : file.info(kPrefix + n);
    };
    const auto& wte = find("wte.weight");
    const auto& wpe = find("wpe.weight");
    CHECK(wte.shape.size() == 2 && wpe.shape.size() == 2, "'{}': wte/wpe are not matrices",
          model_path);
    auto dim = [&](const SafeTensorInfo& t, const char* name, size_t axis, const char* key) {
      CHECK(t.shape[axis] <= std::numeric_limits<int>::max(),
            "'{}': {} has shape {}, so {} = {} is beyond any model (at most {})", model_path, name,
            shape_string(t.shape), key, t.shape[axis], std::numeric_limits<int>::max());
      return static_cast<int>(t.shape[axis]);
    };
    config.vocab_size = dim(wte, "wte.weight", 0, "vocab_size");
    config.n_embd = dim(wte, "wte.weight", 1, "n_embd");
    config.block_size = dim(wpe, "wpe.weight", 0, "block_size");
    CHECK(config.n_embd % 64 == 0,
          "'{}': n_embd {} is not a multiple of 64, so n_head cannot be "
          "inferred; pass its config.json",
          model_path, config.n_embd);
    config.n_head = config.n_embd / 64;
    int layers = 0;
    while (file.contains("h." + std::to_string(layers) + ".ln_1.weight") ||
           file.contains(kPrefix + ("h." + std::to_string(layers) + ".ln_1.weight"))) {
      ++layers;
    }
    config.n_layer = layers;
    config.bias = file.contains("h.0.ln_1.bias") || file.contains("transformer.h.0.ln_1.bias");
    validate_from(config, model_path);
  }
  const ParamTable table(config);
  // Every tensor present with its shape before the arena is sized from the config: the file's
  // own bytes then bound the allocation.
  check_hf_params(file, config, table);
  LoadedModel m{config, Buffer<float>(static_cast<size_t>(table.total_numel()))};
  read_hf_params(file, config, table, m.params.data());
  return m;
}

}  // namespace nanogpt
