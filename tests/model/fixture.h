// Reader of the PyTorch reference fixtures (tests/fixtures/torch/*.safetensors, written by
// make_fixture.py) and a helper that loads their weights into a GPT. Test-only.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/rng.h"
#include "model/gpt.h"

namespace nanogpt::testing {

struct FixtureTensor {
  std::string dtype;  // "F32", "F64", "I32"
  std::vector<int64_t> shape;
  std::vector<char> bytes;
};

class TorchFixture {
 public:
  explicit TorchFixture(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    CHECK(f.good(), "cannot open fixture {}; regenerate with tests/fixtures/torch/make_fixture.py",
          path);
    uint64_t n = 0;
    f.read(reinterpret_cast<char*>(&n), 8);
    std::string header(n, '\0');
    f.read(header.data(), static_cast<std::streamsize>(n));
    std::vector<char> data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    const nlohmann::json j = nlohmann::json::parse(header);
    for (const auto& [name, v] : j.items()) {
      if (name == "__metadata__") {
        for (const auto& [k, s] : v.items()) meta_[k] = s.get<std::string>();
        continue;
      }
      FixtureTensor t;
      t.dtype = v["dtype"].get<std::string>();
      t.shape = v["shape"].get<std::vector<int64_t>>();
      const auto off = v["data_offsets"].get<std::vector<uint64_t>>();
      CHECK(off[1] <= data.size(), "fixture {}: tensor {} out of bounds", path, name);
      t.bytes.assign(data.begin() + static_cast<int64_t>(off[0]),
                     data.begin() + static_cast<int64_t>(off[1]));
      tensors_[name] = std::move(t);
    }
  }

  bool has(const std::string& name) const { return tensors_.count(name) > 0; }
  const FixtureTensor& tensor(const std::string& name) const {
    auto it = tensors_.find(name);
    CHECK(it != tensors_.end(), "fixture has no tensor '{}'", name);
    return it->second;
  }
  template <typename T>
  std::vector<T> get(const std::string& name, const char* dtype) const {
    const FixtureTensor& t = tensor(name);
    CHECK(t.dtype == dtype, "fixture tensor {}: dtype {}, expected {}", name, t.dtype, dtype);
    std::vector<T> out(t.bytes.size() / sizeof(T));
    std::memcpy(out.data(), t.bytes.data(), t.bytes.size());
    return out;
  }
  std::vector<float> f32(const std::string& name) const { return get<float>(name, "F32"); }
  std::vector<double> f64(const std::string& name) const { return get<double>(name, "F64"); }
  std::vector<int> i32(const std::string& name) const { return get<int>(name, "I32"); }

  int meta_int(const std::string& key) const { return std::stoi(meta_.at(key)); }
  double meta_double(const std::string& key) const { return std::stod(meta_.at(key)); }
  const std::string& meta(const std::string& key) const { return meta_.at(key); }

  ModelConfig config() const {
    ModelConfig c;
    c.n_layer = meta_int("n_layer");
    c.n_head = meta_int("n_head");
    c.n_embd = meta_int("n_embd");
    c.block_size = meta_int("block_size");
    c.vocab_size = meta_int("vocab_size");
    c.bias = meta("bias") == "True";
    c.gelu = meta("gelu");
    c.dropout = 0.0;
    // The architecture options (make_modern_fixture.py); absent in GPT-2's fixtures.
    auto opt = [&](const std::string& key) -> const std::string* {
      auto it = meta_.find(key);
      return it == meta_.end() ? nullptr : &it->second;
    };
    if (auto* v = opt("norm")) c.norm = *v;
    if (auto* v = opt("position")) c.position = *v;
    if (auto* v = opt("rope_theta")) c.rope_theta = std::stod(*v);
    if (auto* v = opt("qk_norm")) c.qk_norm = *v == "True";
    if (auto* v = opt("activation")) c.activation = *v;
    if (auto* v = opt("tie_embeddings")) c.tie_embeddings = *v == "True";
    if (auto* v = opt("logit_softcap")) c.logit_softcap = std::stod(*v);
    if (auto* v = opt("unet_skips")) c.unet_skips = *v == "True";
    if (auto* v = opt("qk_norm_gain")) c.qk_norm_gain = std::stod(*v);
    if (auto* v = opt("attn_gain")) c.attn_gain = std::stod(*v);
    return c;
  }

  // Copies param/<name> into the model's arena; wte's padded rows V..Vp-1 are set to zero.
  void load_params(GPT& model) const {
    std::span<float> arena = model.params();
    std::fill(arena.begin(), arena.end(), 0.0f);
    for (const ParamSpec& s : model.table().specs()) {
      const std::vector<float> v = f32("param/" + s.name);
      CHECK(static_cast<int64_t>(v.size()) <= s.numel, "param {} too large", s.name);
      std::copy(v.begin(), v.end(), arena.begin() + s.offset);
    }
  }

 private:
  std::map<std::string, FixtureTensor> tensors_;
  std::map<std::string, std::string> meta_;
};

// Non-trivial weights: nanoGPT's init from `seed` with the random tensors scaled by `scale` (so
// activations are not near-uniform), gains around 1 and zero-initialized tensors small and random
// (so their gradients matter).
inline void randomize_weights(GPT& model, uint64_t seed, float scale) {
  model.init_weights(seed);
  Rng rng(seed + 1);
  for (const ParamSpec& s : model.table().specs()) {
    float* p = model.params().data() + s.offset;
    for (int64_t i = 0; i < s.numel; ++i) {
      if (s.init_one)
        p[i] = 1.0f + 0.2f * (rng.uniform() - 0.5f);
      else if (s.init_std == 0.0f)
        p[i] = 0.1f * (rng.uniform() - 0.5f);
      else
        p[i] *= scale;
    }
  }
}

inline std::string fixture_path(const std::string& file) {
  return std::string(NANOGPT_SOURCE_DIR) + "/tests/fixtures/torch/" + file;
}

// Largest |p[i]| and largest |a[i] - b[i]| over n elements, in double.
inline double max_abs(const float* p, int64_t n) {
  double m = 0.0;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, std::fabs(static_cast<double>(p[i])));
  return m;
}

inline double max_abs_diff(const float* a, const float* b, int64_t n) {
  double m = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    m = std::max(m, std::fabs(static_cast<double>(a[i]) - static_cast<double>(b[i])));
  }
  return m;
}

}  // namespace nanogpt::testing
