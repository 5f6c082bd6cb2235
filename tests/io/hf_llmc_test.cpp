// Hugging Face GPT-2 loading (fixture written by tests/fixtures/hf/make_hf_fixture.py with torch:
// "transformer." prefix, Conv1D layout, mask buffers, lm_head, BF16), export/load round trips and
// config inference; llm.c model files: fp32 round trip, bias detection, bf16 (version 5), errors.
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <fstream>
#include <iterator>

#include "core/float16.h"
#include "io/hf_gpt2.h"
#include "io/llmc_model.h"
#include "io_test_util.h"

namespace nanogpt {
namespace {

using testing::expect_error;
using testing::make_params;
using testing::small_config;
using testing::TempDir;

const std::string kFixtures = std::string(NANOGPT_SOURCE_DIR) + "/tests/fixtures/hf";

std::vector<float> read_floats(const std::string& path) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  EXPECT_TRUE(f.good()) << path;
  std::vector<float> v(static_cast<size_t>(f.tellg()) / 4);
  f.seekg(0);
  f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * 4));
  return v;
}

// Our arena without the alignment gaps, in table order (the fixture's expected_*.bin layout).
std::vector<float> packed(const ParamTable& table, const float* arena) {
  std::vector<float> out;
  for (const auto& s : table.specs())
    out.insert(out.end(), arena + s.offset, arena + s.offset + s.numel);
  return out;
}

TEST(HfGpt2, LoadsTorchWrittenFixture) {
  LoadedModel m = load_hf_gpt2(kFixtures + "/tiny_gpt2/model.safetensors");  // config beside
  EXPECT_EQ(m.config.n_layer, 2);
  EXPECT_EQ(m.config.n_head, 2);
  EXPECT_EQ(m.config.n_embd, 8);
  EXPECT_EQ(m.config.block_size, 16);
  EXPECT_EQ(m.config.vocab_size, 10);
  EXPECT_TRUE(m.config.bias);
  EXPECT_EQ(m.config.gelu, "tanh");
  const ParamTable table(m.config);
  EXPECT_EQ(packed(table, m.params.data()), read_floats(kFixtures + "/expected_ours.bin"));
}

TEST(HfGpt2, LoadsBf16WithoutPrefix) {
  LoadedModel m =
      load_hf_gpt2(kFixtures + "/tiny_gpt2_bf16.safetensors", kFixtures + "/tiny_gpt2/config.json");
  const ParamTable table(m.config);
  EXPECT_EQ(packed(table, m.params.data()), read_floats(kFixtures + "/expected_ours_bf16.bin"));
}

TEST(HfGpt2, ExportLoadRoundTripAndInference) {
  TempDir tmp;
  for (bool bias : {true, false}) {
    ModelConfig config = small_config(bias);
    config.n_embd = 64;  // a multiple of 64, so n_head can be inferred without config.json
    config.n_head = 1;
    config.gelu = "exact";
    const ParamTable table(config);
    const std::vector<float> params = make_params(config, table);
    const std::string path = tmp / "model.safetensors";
    write_hf_safetensors(path, config, table, params.data());
    write_text_file(tmp / "config.json", hf_config_json(config).dump());
    LoadedModel m = load_hf_gpt2(path);  // exact config from nanogpt_model_config
    EXPECT_EQ(m.config.vocab_size, 70);
    EXPECT_EQ(m.config.bias, bias);
    EXPECT_EQ(m.config.gelu, "exact");
    EXPECT_EQ(std::vector<float>(m.params.begin(), m.params.end()), params);
    std::filesystem::remove(tmp / "config.json");
    LoadedModel inferred = load_hf_gpt2(path);  // from tensor shapes: padded vocab, biases present
    EXPECT_EQ(inferred.config.n_layer, 2);
    EXPECT_EQ(inferred.config.n_head, 1);
    EXPECT_EQ(inferred.config.vocab_size, 128);
    EXPECT_TRUE(inferred.config.bias);
  }
}

TEST(HfGpt2, ErrorsNameFileAndTensor) {
  TempDir tmp;
  const std::string model = kFixtures + "/tiny_gpt2/model.safetensors";
  auto j = nlohmann::json::parse(read_text_file(kFixtures + "/tiny_gpt2/config.json"));
  j["n_layer"] = 1;
  write_text_file(tmp / "one_layer.json", j.dump());
  expect_error([&] { load_hf_gpt2(model, tmp / "one_layer.json"); },
               {model, "unexpected tensor 'transformer.h.1."});
  j["n_layer"] = 3;
  write_text_file(tmp / "three.json", j.dump());
  expect_error([&] { load_hf_gpt2(model, tmp / "three.json"); }, {model, "missing tensor 'h.2."});
  j["n_layer"] = 2;
  j["n_embd"] = 12;
  j["n_head"] = 3;
  write_text_file(tmp / "wide.json", j.dump());
  expect_error([&] { load_hf_gpt2(model, tmp / "wide.json"); }, {model, "wte.weight", "[10, 8]"});
  j["n_embd"] = 8;
  j["n_head"] = 2;
  j["activation_function"] = "relu";
  write_text_file(tmp / "relu.json", j.dump());
  expect_error([&] { load_hf_gpt2(model, tmp / "relu.json"); }, {"relu.json", "relu"});
  expect_error([&] { load_hf_gpt2(kFixtures + "/tiny_gpt2_bf16.safetensors"); },
               {"n_head cannot be inferred"});
}

TEST(LlmcModel, RoundTripWithAndWithoutBias) {
  TempDir tmp;
  for (bool bias : {true, false}) {
    const ModelConfig config = small_config(bias);
    const ParamTable table(config);
    const std::vector<float> params = make_params(config, table);
    const std::string path = tmp / "model.bin";
    const FileDigest d = export_llmc_model(path, config, table, params.data());
    // Size: header + every tensor, biases included even when off.
    const int64_t C = 16, L = 2, Vp = 128, T = 8;
    EXPECT_EQ(d.bytes, 1024u + 4u * static_cast<uint64_t>(Vp * C + T * C +
                                                          L * (12 * C * C + 13 * C) + 2 * C));
    LoadedModel m = load_llmc_model(path);
    EXPECT_EQ(m.config.bias, bias);  // detected from all-zero biases
    EXPECT_EQ(m.config.n_layer, 2);
    EXPECT_EQ(m.config.vocab_size, 70);
    EXPECT_EQ(std::vector<float>(m.params.begin(), m.params.end()), params);
    // Header fields.
    std::array<int32_t, 8> h{};
    std::ifstream(path, std::ios::binary).read(reinterpret_cast<char*>(h.data()), 32);
    EXPECT_EQ(h, (std::array<int32_t, 8>{20240326, 3, 8, 70, 2, 2, 16, 128}));
  }
}

TEST(LlmcModel, PaddedVocabRowsAreWrittenAsZeros) {
  TempDir tmp;
  const ModelConfig config = small_config(true);
  const ParamTable table(config);
  std::vector<float> params = make_params(config, table);
  const auto& wte = table.at("wte.weight");
  std::fill(params.begin() + wte.offset + 70 * 16, params.begin() + wte.offset + wte.numel, 9.0f);
  export_llmc_model(tmp / "m.bin", config, table, params.data());
  LoadedModel m = load_llmc_model(tmp / "m.bin");
  for (int64_t i = 0; i < wte.numel; ++i) {
    ASSERT_EQ(m.params[wte.offset + i], i < 70 * 16 ? params[wte.offset + i] : 0.0f) << i;
  }
}

TEST(LlmcModel, Bf16Version5ExportAndImport) {
  TempDir tmp;
  const ModelConfig config = small_config(true);
  const ParamTable table(config);
  const std::vector<float> params = make_params(config, table);
  const std::string fp32 = tmp / "fp32.bin";
  export_llmc_model(fp32, config, table, params.data());
  // Convert the fp32 file to version 5 by hand.
  std::ifstream in(fp32, std::ios::binary | std::ios::ate);
  std::vector<char> bytes(static_cast<size_t>(in.tellg()));
  in.seekg(0);
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  std::vector<char> out(bytes.begin(), bytes.begin() + 1024);
  int32_t version = 5;
  std::memcpy(out.data() + 4, &version, 4);
  for (size_t i = 1024; i < bytes.size(); i += 4) {
    float f;
    std::memcpy(&f, bytes.data() + i, 4);
    const uint16_t b = float_to_bf16(f);
    out.insert(out.end(), reinterpret_cast<const char*>(&b), reinterpret_cast<const char*>(&b) + 2);
  }
  const std::string bf16 = tmp / "bf16.bin";
  std::ofstream(bf16, std::ios::binary).write(out.data(), static_cast<std::streamsize>(out.size()));
  LoadedModel m = load_llmc_model(bf16);
  // The exporter's version 5 is byte-identical to the hand conversion.
  export_llmc_model(tmp / "exported_bf16.bin", config, table, params.data(), /*bf16=*/true);
  std::ifstream e(tmp / "exported_bf16.bin", std::ios::binary);
  const std::vector<char> exported((std::istreambuf_iterator<char>(e)),
                                   std::istreambuf_iterator<char>());
  EXPECT_EQ(exported, out);
  for (const auto& s : table.specs()) {
    for (int64_t i = s.offset; i < s.offset + s.numel; ++i) {
      ASSERT_EQ(m.params[i], bf16_to_float(float_to_bf16(params[i]))) << s.name;
    }
  }
}

TEST(LlmcModel, ValidationErrors) {
  TempDir tmp;
  const ModelConfig config = small_config(true);
  const ParamTable table(config);
  const std::vector<float> params = make_params(config, table);
  const std::string path = tmp / "model.bin";
  export_llmc_model(path, config, table, params.data());
  auto patch = [&](int index, int32_t value) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(index * 4);
    f.write(reinterpret_cast<const char*>(&value), 4);
  };
  patch(1, 4);
  expect_error([&] { load_llmc_model(path); }, {path, "version 4"});
  patch(1, 3);
  patch(0, 20240520);
  expect_error([&] { load_llmc_model(path); }, {path, "magic number 20240520"});
  patch(0, 20240326);
  patch(4, 3);  // claims 3 layers: the size no longer fits
  expect_error([&] { load_llmc_model(path); }, {path, "truncated"});
  patch(4, 2);
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 4);
  expect_error([&] { load_llmc_model(path); }, {path, "truncated"});
  std::filesystem::resize_file(path, 100);
  expect_error([&] { load_llmc_model(path); }, {path, "1024-byte header"});
}

// Regression tests from fuzzing (fuzz/llmc_model_fuzz.cpp, fuzz/hf_config_fuzz.cpp,
// fuzz/safetensors_fuzz.cpp): huge sizes in headers and config.json fail with a nanogpt::Error
// naming the file, the field, the value and the limit, before anything is sized from them.
std::string llmc_header(std::array<int32_t, 8> fields) {
  std::string bytes(1024, '\0');
  std::memcpy(bytes.data(), fields.data(), sizeof(fields));
  return bytes;
}

TEST(LlmcModelFuzzRegression, HugeHeaderValuesFailBeforeAllocation) {
  // n_embd 2^31 - 1: 4 * C * C overflowed int64 (undefined behaviour) before the size check.
  expect_error(
      [] {
        parse_llmc_model(llmc_header({20240326, 5, 1, 1, 1, 1, 2147483647, 1}), "m.bin");
      },
      {"'m.bin'", "llm.c header", "n_embd = 2147483647: expected 1..65536"});
  expect_error(
      [] {
        parse_llmc_model(llmc_header({20240326, 3, 1024, 50257, 2147483647, 12, 768, 50304}),
                         "m.bin");
      },
      {"'m.bin'", "n_layer = 2147483647: expected 1..1024"});
  expect_error(
      [] {
        parse_llmc_model(llmc_header({20240326, 3, 1024, 2147483647, 12, 12, 768, 2147483647}),
                         "m.bin");
      },
      {"'m.bin'", "vocab_size = 2147483647: expected 1..65536"});
  expect_error(
      [] {
        parse_llmc_model(llmc_header({20240326, 3, 2147483647, 50257, 12, 12, 768, 50304}),
                         "m.bin");
      },
      {"'m.bin'", "block_size = 2147483647: expected 1..1048576"});
  // Within every per-key bound but 1024 layers of width 65536: too many parameters in total.
  expect_error(
      [] {
        parse_llmc_model(llmc_header({20240326, 3, 1024, 50257, 1024, 1, 65536, 50304}), "m.bin");
      },
      {"'m.bin'", "parameters, more than"});
  // Plausible values that the file's size does not hold: the size check names the header.
  expect_error(
      [] {
        parse_llmc_model(llmc_header({20240326, 3, 1024, 50257, 12, 12, 768, 50304}), "m.bin");
      },
      {"'m.bin'", "needs exactly", "(truncated)"});
}

TEST(HfConfigFuzzRegression, HugeOrWronglyTypedValuesAreNamedErrors) {
  const nlohmann::json base = {
      {"n_layer", 2}, {"n_head", 2}, {"n_embd", 16}, {"n_positions", 8}, {"vocab_size", 70}};
  auto with = [&](const char* key, const nlohmann::json& v) {
    nlohmann::json j = base;
    j[key] = v;
    return j.dump();
  };
  EXPECT_EQ(parse_hf_config(base.dump(), "config.json").n_layer, 2);
  // n_layer 2^31 - 1 used to pass validation and overflow int64 in ParamTable.
  expect_error([&] { parse_hf_config(with("n_layer", 2147483647), "c.json"); },
               {"'c.json'", "n_layer = 2147483647: expected 1..1024"});
  expect_error([&] { parse_hf_config(with("n_positions", 2147483647), "c.json"); },
               {"'c.json'", "block_size = 2147483647: expected 1..1048576"});
  expect_error([&] { parse_hf_config(with("n_embd", 1 << 30), "c.json"); },
               {"'c.json'", "n_embd = 1073741824: expected 1..65536"});
  // Integers beyond int were truncated (2^40 -> 0), floats truncated (12.5 -> 12) or, beyond
  // int's range, undefined behaviour (1e300); strings threw nlohmann's own exception.
  expect_error([&] { parse_hf_config(with("n_layer", int64_t{1} << 40), "c.json"); },
               {"'c.json'", "'n_layer' must be an integer", "1099511627776"});
  expect_error([&] { parse_hf_config(with("n_head", 12.5), "c.json"); },
               {"'c.json'", "'n_head' must be an integer", "12.5"});
  expect_error([&] { parse_hf_config(with("n_embd", 1e300), "c.json"); },
               {"'c.json'", "'n_embd' must be an integer"});
  expect_error([&] { parse_hf_config(with("vocab_size", "50257"), "c.json"); },
               {"'c.json'", "'vocab_size' must be an integer", "\"50257\""});
  expect_error([&] { parse_hf_config(with("layer_norm_epsilon", "x"), "c.json"); },
               {"'c.json'", "'layer_norm_epsilon' must be a number"});
  expect_error([&] { parse_hf_config(with("activation_function", 3), "c.json"); },
               {"'c.json'", "'activation_function' must be a string"});
  // Our own nanogpt_model_config: the same checks per key.
  nlohmann::json ours = nlohmann::json::parse(hf_config_json(small_config()).dump());
  EXPECT_EQ(parse_hf_config(ours.dump(), "c.json").vocab_size, 70);
  ours["nanogpt_model_config"]["n_layer"] = 1e300;
  expect_error([&] { parse_hf_config(ours.dump(), "c.json"); },
               {"'c.json': nanogpt_model_config", "'n_layer' expects int"});
  ours["nanogpt_model_config"]["n_layer"] = 2147483647;
  expect_error([&] { parse_hf_config(ours.dump(), "c.json"); },
               {"'c.json'", "n_layer = 2147483647: expected 1..1024"});
  ours["nanogpt_model_config"] = 7;
  expect_error([&] { parse_hf_config(ours.dump(), "c.json"); },
               {"'c.json': nanogpt_model_config must be an object"});
  expect_error([&] { parse_hf_config("[1, 2]", "c.json"); }, {"'c.json'", "JSON object"});
  expect_error([&] { parse_hf_config("{", "c.json"); }, {"'c.json'", "not valid JSON"});
}

TEST(HfGpt2FuzzRegression, TensorsAreCheckedBeforeTheArenaIsAllocated) {
  // wte [1, 1024] and wpe [1, 1024] in F16 plus 300 "h.N.ln_1.weight" entries of shape [0]: the
  // inferred config (300 layers of width 1024, 3.8e9 parameters) used to allocate 15 GB before
  // finding that the layers' tensors are missing.
  TempDir tmp;
  std::string header =
      R"({"wte.weight":{"dtype":"F16","shape":[1,1024],"data_offsets":[0,2048]},)"
      R"("wpe.weight":{"dtype":"F16","shape":[1,1024],"data_offsets":[2048,4096]})";
  for (int l = 0; l < 300; ++l) {
    header += ",\"h." + std::to_string(l) +
              R"(.ln_1.weight":{"dtype":"F16","shape":[0],"data_offsets":[0,0]})";
  }
  header += "}";
  const uint64_t n = header.size();
  std::string bytes(reinterpret_cast<const char*>(&n), 8);
  bytes += header + std::string(4096, '\0');
  const std::string path = tmp / "model.safetensors";
  std::ofstream(path, std::ios::binary) << bytes;
  expect_error([&] { load_hf_gpt2(path); },
               {path, "'h.0.ln_1.weight' has shape [0]", "expects [1024]"});
  // 2000 layers: beyond the layer bound, named with the file.
  std::string many = header.substr(0, header.size() - 1);
  for (int l = 300; l < 2000; ++l) {
    many += ",\"h." + std::to_string(l) +
            R"(.ln_1.weight":{"dtype":"F16","shape":[0],"data_offsets":[0,0]})";
  }
  many += "}";
  const uint64_t m = many.size();
  std::string bytes2(reinterpret_cast<const char*>(&m), 8);
  bytes2 += many + std::string(4096, '\0');
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes2;
  expect_error([&] { load_hf_gpt2(path); }, {path, "n_layer = 2000: expected 1..1024"});
}

}  // namespace
}  // namespace nanogpt

namespace nanogpt {
namespace {

// Our config.json records every architecture option; one written before the options existed
// (GPT-2's keys only) reads as GPT-2.
TEST(HfGpt2, ConfigRecordsTheArchitectureAndOlderConfigsReadAsGpt2) {
  ModelConfig c;
  c.n_layer = 2, c.n_head = 2, c.n_embd = 16, c.block_size = 8, c.vocab_size = 65;
  c.norm = "rmsnorm", c.position = "rotary", c.rope_theta = 500, c.qk_norm = true;
  c.activation = "relu2", c.tie_embeddings = false, c.zero_init_proj = true, c.logit_softcap = 30;
  c.unet_skips = true;
  const ModelConfig back = parse_hf_config(hf_config_json(c).dump(), "config.json");
  EXPECT_EQ(back.norm, "rmsnorm");
  EXPECT_EQ(back.position, "rotary");
  EXPECT_EQ(back.rope_theta, 500);
  EXPECT_TRUE(back.qk_norm);
  EXPECT_EQ(back.activation, "relu2");
  EXPECT_FALSE(back.tie_embeddings);
  EXPECT_TRUE(back.zero_init_proj);
  EXPECT_EQ(back.logit_softcap, 30);
  EXPECT_TRUE(back.unet_skips);

  nlohmann::ordered_json old = hf_config_json(ModelConfig{.n_layer = 2, .n_head = 2, .n_embd = 16,
                                                          .block_size = 8, .vocab_size = 65});
  for (const char* key : {"norm", "position", "rope_theta", "qk_norm", "activation",
                          "tie_embeddings", "zero_init_proj", "logit_softcap", "unet_skips"}) {
    old["nanogpt_model_config"].erase(key);
  }
  const ModelConfig gpt2 = parse_hf_config(old.dump(), "old/config.json");
  EXPECT_EQ(gpt2.norm, "layernorm");
  EXPECT_EQ(gpt2.position, "learned");
  EXPECT_TRUE(gpt2.tie_embeddings);
  EXPECT_EQ(gpt2.logit_softcap, 0);
  EXPECT_FALSE(gpt2.unet_skips);
  // GPT-2's own keys stay required.
  old["nanogpt_model_config"].erase("n_layer");
  EXPECT_THROW(parse_hf_config(old.dump(), "old/config.json"), Error);
}

}  // namespace
}  // namespace nanogpt
