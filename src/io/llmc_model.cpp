// llm.c model file export (fp32) and import (fp32 / bf16), mapping its 16 layer-stacked tensors to
// our per-layer HF-named parameters.
#include "io/llmc_model.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "core/check.h"
#include "core/float16.h"
#include "model/architecture.h"

namespace nanogpt {
namespace {

constexpr int32_t kMagic = 20240326;
constexpr int kHeaderInts = 256;

// One of llm.c's tensors after wte and wpe, named by the HF parameter it holds.
struct LlmcTensor {
  const char* suffix;  // per-layer HF name after "h.{l}.", or a global HF name
  bool per_layer;
  bool is_bias;  // written as zeros / may be dropped when bias is off
};

// The last 14 of llm.c's 16 tensors, in file order (wte and wpe come first and are handled
// separately since their row counts come from the header).
constexpr std::array<LlmcTensor, 14> kLayerTensors = {{
    {"ln_1.weight", true, false},
    {"ln_1.bias", true, true},
    {"attn.c_attn.weight", true, false},
    {"attn.c_attn.bias", true, true},
    {"attn.c_proj.weight", true, false},
    {"attn.c_proj.bias", true, true},
    {"ln_2.weight", true, false},
    {"ln_2.bias", true, true},
    {"mlp.c_fc.weight", true, false},
    {"mlp.c_fc.bias", true, true},
    {"mlp.c_proj.weight", true, false},
    {"mlp.c_proj.bias", true, true},
    {"ln_f.weight", false, false},
    {"ln_f.bias", false, true},
}};

// Element count of one layer's slice of tensor t (bias tensors have the size of their output).
int64_t slice_numel(const LlmcTensor& t, int64_t C) {
  const std::string s = t.suffix;
  if (s == "attn.c_attn.weight") return 3 * C * C;
  if (s == "attn.c_attn.bias") return 3 * C;
  if (s == "attn.c_proj.weight") return C * C;
  if (s == "mlp.c_fc.weight" || s == "mlp.c_proj.weight") return 4 * C * C;
  if (s == "mlp.c_fc.bias") return 4 * C;
  return C;  // LayerNorm weights/biases, attn/mlp c_proj bias
}

std::string param_name(const LlmcTensor& t, int l) {
  return t.per_layer ? "h." + std::to_string(l) + "." + t.suffix : t.suffix;
}

}  // namespace

FileDigest export_llmc_model(const std::string& path, const ModelConfig& config,
                             const ParamTable& table, const float* params, bool bf16) {
  require_gpt2_architecture(config, "llm.c's model file");
  const int64_t C = config.n_embd, L = config.n_layer, Vp = config.padded_vocab_size();
  std::array<int32_t, kHeaderInts> header{};
  header[0] = kMagic;
  header[1] = bf16 ? 5 : 3;
  header[2] = config.block_size;
  header[3] = config.vocab_size;
  header[4] = config.n_layer;
  header[5] = config.n_head;
  header[6] = config.n_embd;
  header[7] = static_cast<int32_t>(Vp);
  FileWriter out(path);
  out.write(header.data(), sizeof(header));
  std::vector<uint16_t> half;
  auto put = [&](const float* data, int64_t n) {  // n floats, or zeros when data is null
    if (!bf16 && data) {
      out.write(data, static_cast<size_t>(n) * 4);
      return;
    }
    const int64_t block = 1 << 16;
    for (int64_t done = 0; done < n; done += block) {
      const int64_t take = std::min(block, n - done);
      if (bf16) {
        half.resize(static_cast<size_t>(take));
        for (int64_t i = 0; i < take; ++i) half[i] = data ? float_to_bf16(data[done + i]) : 0;
        out.write(half.data(), static_cast<size_t>(take) * 2);
      } else {
        const std::vector<float> zeros(static_cast<size_t>(take), 0.0f);
        out.write(zeros.data(), static_cast<size_t>(take) * 4);
      }
    }
  };
  const auto& wte = table.at("wte.weight");  // (Vp, C); rows >= V written as zeros (llm.c)
  const int64_t V = config.vocab_size;
  put(params + wte.offset, V * C);
  put(nullptr, (Vp - V) * C);
  const auto& wpe = table.at("wpe.weight");  // (maxT, C)
  put(params + wpe.offset, wpe.numel);
  for (const auto& t : kLayerTensors) {
    const int64_t n = slice_numel(t, C);
    for (int l = 0; l < (t.per_layer ? L : 1); ++l) {
      const ParamSpec* s = table.find(param_name(t, l));
      if (s) {
        CHECK(s->numel == n, "llm.c export: '{}' has {} elements, expected {}", s->name, s->numel,
              n);
        put(params + s->offset, n);
      } else {
        CHECK(t.is_bias, "llm.c export: the model has no parameter '{}'", param_name(t, l));
        put(nullptr, n);
      }
    }
  }
  return out.close();
}

LoadedModel load_llmc_model(const std::string& path, std::optional<bool> bias) {
  const MappedFile file(path);
  return parse_llmc_model(std::string_view(reinterpret_cast<const char*>(file.data()), file.size()),
                          path, bias);
}

LoadedModel parse_llmc_model(std::string_view bytes, const std::string& path,
                             std::optional<bool> bias) {
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  const uint64_t size = bytes.size();
  CHECK(size >= kHeaderInts * 4,
        "'{}' is truncated: {} bytes, but an llm.c model file "
        "starts with a 1024-byte header",
        path, size);
  std::array<int32_t, kHeaderInts> h{};
  std::memcpy(h.data(), data, sizeof(h));
  CHECK(h[0] == kMagic,
        "'{}': magic number {} is not an llm.c model file's {} (token shards "
        "start with 20240520, tokenizer files with 20240328)",
        path, h[0], kMagic);
  CHECK(h[1] == 3 || h[1] == 5,
        "'{}': llm.c model version {} is not supported (expected 3 = "
        "fp32 or 5 = bf16)",
        path, h[1]);
  const int elem = h[1] == 3 ? 4 : 2;
  const int64_t maxT = h[2], V = h[3], L = h[4], NH = h[5], C = h[6], file_Vp = h[7];
  CHECK(maxT > 0 && V > 0 && L > 0 && NH > 0 && C > 0 && file_Vp >= V,
        "'{}': inconsistent header maxT={} V={} L={} NH={} C={} Vp={}", path, maxT, V, L, NH, C,
        file_Vp);
  ModelConfig config;
  config.block_size = static_cast<int>(maxT);
  config.vocab_size = static_cast<int>(V);
  config.n_layer = static_cast<int>(L);
  config.n_head = static_cast<int>(NH);
  config.n_embd = static_cast<int>(C);
  config.gelu = "tanh";
  config.bias = true;
  // Bounds every size below (no overflow, nothing allocated for an absurd header).
  try {
    config.validate();
  } catch (const Error& e) {
    fail(
        "'{}': llm.c header (maxT = block_size, V = vocab_size, L = n_layer, NH = n_head, C = "
        "n_embd): {}",
        path, e.what());
  }

  int64_t total = (file_Vp + maxT) * C;
  for (const auto& t : kLayerTensors) total += slice_numel(t, C) * (t.per_layer ? L : 1);
  const uint64_t expected = kHeaderInts * 4 + static_cast<uint64_t>(total) * elem;
  CHECK(size == expected,
        "'{}' has {} bytes but its header (version {}, maxT={} V={} "
        "L={} NH={} C={} Vp={}) needs exactly {}{}",
        path, size, h[1], maxT, V, L, NH, C, file_Vp, expected,
        size < expected ? " (truncated)" : "");

  const uint8_t* cursor = data + kHeaderInts * 4;
  auto read = [&](float* dst, int64_t n) {  // n elements from the cursor, converted to float
    if (elem == 4) {
      std::memcpy(dst, cursor, static_cast<size_t>(n) * 4);
    } else {
      for (int64_t i = 0; i < n; ++i) {
        uint16_t v;
        std::memcpy(&v, cursor + 2 * i, 2);
        dst[i] = bf16_to_float(v);
      }
    }
    cursor += n * elem;
  };
  // First pass: are all biases zero? (decides bias when not given)
  if (!bias.has_value()) {
    const uint8_t* p = data + kHeaderInts * 4 + (file_Vp + maxT) * C * elem;
    bool all_zero = true;
    for (const auto& t : kLayerTensors) {
      const int64_t bytes = slice_numel(t, C) * (t.per_layer ? L : 1) * elem;
      if (t.is_bias) {
        for (int64_t i = 0; i < bytes && all_zero; ++i) all_zero = p[i] == 0;
      }
      p += bytes;
    }
    bias = !all_zero;
  }
  config.bias = *bias;
  const ParamTable table(config);
  LoadedModel m{config, Buffer<float>(static_cast<size_t>(table.total_numel()))};
  float* params = m.params.data();
  const auto& wte = table.at("wte.weight");  // ours (Vp, C), file (file_Vp, C)
  const int64_t our_Vp = wte.shape[0];
  std::vector<float> rows(static_cast<size_t>(file_Vp * C));
  read(rows.data(), file_Vp * C);
  std::memcpy(params + wte.offset, rows.data(),
              static_cast<size_t>(std::min(file_Vp, our_Vp) * C) * 4);
  read(params + table.at("wpe.weight").offset, maxT * C);
  std::vector<float> skip;
  for (const auto& t : kLayerTensors) {
    const int64_t n = slice_numel(t, C);
    for (int l = 0; l < (t.per_layer ? L : 1); ++l) {
      const ParamSpec* s = table.find(param_name(t, l));
      if (s) {
        read(params + s->offset, n);
      } else {
        skip.resize(static_cast<size_t>(n));
        read(skip.data(), n);
      }
    }
  }
  return m;
}

}  // namespace nanogpt
