// Checkpoint directories: round trip, HF layout of model.safetensors and config.json, every load
// error (checksum, truncation, missing file, newer version, architecture mismatch, optimizer
// state), and atomicity under injected failures and real crashes (forked child _exit mid-write).
// Loading ranges of the arena (ZeRO-1's shards) reads exactly the whole load's slice.
#include "io/checkpoint.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "io/file_util.h"
#include "io/hf_gpt2.h"
#include "io/safetensors.h"
#include "io_test_util.h"

namespace nanogpt {
namespace {

namespace fs = std::filesystem;
using testing::expect_error;
using testing::make_params;
using testing::small_config;
using testing::TempDir;

struct Saved {
  ModelConfig config = small_config();
  ParamTable table{config};
  std::vector<float> params, m, v;
  explicit Saved(float salt) {
    params = make_params(config, table, salt);
    m = make_params(config, table, salt + 1);
    v = make_params(config, table, salt + 2);
  }
  void save(const std::string& dir, int iter, FaultHook hook = nullptr) const {
    CheckpointSaveOptions opts;
    opts.fault_hook = std::move(hook);
    save_checkpoint(dir, config, table, params.data(), {{"m", m.data()}, {"v", v.data()}},
                    {{"optimizer", "adamw"}, {"steps", std::to_string(iter)}},
                    {{"iter_num", iter}, {"best_val_loss", 1.5}}, opts);
  }
  // Loads dir and checks it holds this save's values; returns the iter_num.
  int load_and_check(const std::string& dir) const {
    std::vector<float> p(params.size(), -1.0f), m2(m.size()), v2(v.size());
    // arena gaps are never written; make the comparison only over tensors
    LoadedCheckpoint c =
        load_checkpoint(dir, config, table, p.data(), {{"m", m2.data()}, {"v", v2.data()}});
    for (const auto& s : table.specs()) {
      for (int64_t i = s.offset; i < s.offset + s.numel; ++i) {
        EXPECT_EQ(p[i], params[i]) << s.name;
        EXPECT_EQ(m2[i], m[i]) << s.name;
        EXPECT_EQ(v2[i], v[i]) << s.name;
      }
    }
    EXPECT_EQ(c.optimizer_metadata.at("optimizer"), "adamw");
    EXPECT_EQ(c.optimizer_metadata.at("steps"), std::to_string(c.state.at("iter_num").get<int>()));
    return c.state.at("iter_num").get<int>();
  }
};

TEST(Checkpoint, RangesLoadTheSliceOfTheWholeLoad) {
  TempDir tmp;
  const std::string dir = tmp / "ckpt";
  Saved a(0.25f);
  a.save(dir, 7);
  const int64_t n = a.table.total_numel();
  std::vector<float> p(n), m(n), v(n);
  load_checkpoint(dir, a.config, a.table, p.data(), {{"m", m.data()}, {"v", v.data()}});
  // Cuts inside wte's padded rows, inside transposed (Conv1D) weights, at odd elements.
  const ParamSpec& fc = a.table.at("h.1.mlp.c_fc.weight");
  const int64_t wte_rows = a.config.vocab_size * a.config.n_embd;
  for (auto [b, e] : {std::pair<int64_t, int64_t>{0, n},
                      {0, wte_rows + 40},
                      {wte_rows + 40, fc.offset + 37},
                      {fc.offset + 37, n},
                      {fc.offset + 5, fc.offset + 6},
                      {n, n}}) {
    std::vector<float> ps(e - b, -1.0f), ms(e - b, -1.0f), vs(e - b, -1.0f);
    load_checkpoint(dir, a.config, a.table, ps.data(), {{"m", ms.data()}, {"v", vs.data()}}, {b, e},
                    {b, e});
    for (int64_t i = b; i < e; ++i) {
      ASSERT_EQ(ps[i - b], p[i]) << "[" << b << ", " << e << ") element " << i;
      ASSERT_EQ(ms[i - b], m[i]) << "[" << b << ", " << e << ") element " << i;
      ASSERT_EQ(vs[i - b], v[i]) << "[" << b << ", " << e << ") element " << i;
    }
  }
  // Whole params with a state shard (ZeRO-1 in float32).
  std::vector<float> pw(n), ms(16);
  load_checkpoint(dir, a.config, a.table, pw.data(), {{"m", ms.data()}}, {}, {32, 48});
  EXPECT_EQ(pw, p);
  EXPECT_EQ(ms, std::vector<float>(m.begin() + 32, m.begin() + 48));
  std::vector<float> any(n);
  EXPECT_THROW(load_checkpoint(dir, a.config, a.table, any.data(), {}, {0, n + 1}), Error);
  EXPECT_THROW(load_checkpoint(dir, a.config, a.table, any.data(), {}, {5, 4}), Error);
}

TEST(Checkpoint, RoundTrip) {
  TempDir tmp;
  const std::string dir = tmp / "ckpt";
  Saved a(0.0f);
  a.save(dir, 100);
  for (const char* f : {"model.safetensors", "config.json", "optimizer.safetensors", "state.json",
                        "manifest.json"}) {
    EXPECT_TRUE(fs::exists(dir + "/" + f)) << f;
  }
  EXPECT_EQ(a.load_and_check(dir), 100);
  EXPECT_EQ(read_checkpoint_config(dir).n_layer, a.config.n_layer);
  EXPECT_EQ(read_checkpoint_config(dir).vocab_size, 70);
  // Overwrite with a newer save; only the final directory remains.
  Saved b(5.0f);
  b.save(dir, 200);
  EXPECT_EQ(b.load_and_check(dir), 200);
  for (const auto& e : fs::directory_iterator(tmp.path())) {
    EXPECT_EQ(e.path().filename(), "ckpt") << "leftover " << e.path();
  }
  // Loading without optimizer state works too.
  std::vector<float> p(b.params.size());
  EXPECT_NO_THROW(load_checkpoint(dir, b.config, b.table, p.data()));
}

TEST(Checkpoint, ModelFileHasHfNamesLayoutAndConfig) {
  TempDir tmp;
  const std::string dir = tmp / "ckpt";
  Saved a(0.0f);
  a.save(dir, 1);
  SafeTensorsReader r(dir + "/model.safetensors");
  EXPECT_EQ(r.metadata().at("format"), "pt");
  const int64_t C = a.config.n_embd;
  const auto& spec = a.table.at("h.1.attn.c_attn.weight");  // ours (3C, C)
  EXPECT_EQ(r.info("h.1.attn.c_attn.weight").shape, (std::vector<int64_t>{C, 3 * C}));
  std::vector<float> hf(spec.numel);
  r.read_f32("h.1.attn.c_attn.weight", {C, 3 * C}, hf.data());
  for (int64_t o = 0; o < 3 * C; ++o) {
    for (int64_t i = 0; i < C; ++i) ASSERT_EQ(hf[i * 3 * C + o], a.params[spec.offset + o * C + i]);
  }
  EXPECT_EQ(r.info("wte.weight").shape, (std::vector<int64_t>{128, C}));
  const auto cfg = nlohmann::json::parse(read_text_file(dir + "/config.json"));
  EXPECT_EQ(cfg.at("model_type"), "gpt2");
  EXPECT_EQ(cfg.at("n_layer"), 2);
  EXPECT_EQ(cfg.at("n_positions"), 8);
  EXPECT_EQ(cfg.at("vocab_size"), 128);  // padded: the rows of wte
  EXPECT_EQ(cfg.at("activation_function"), "gelu_new");
  EXPECT_EQ(cfg.at("tie_word_embeddings"), true);
  EXPECT_EQ(cfg.at("layer_norm_epsilon"), 1e-5);
  EXPECT_EQ(cfg.at("nanogpt_model_config").at("vocab_size"), 70);
}

TEST(Checkpoint, BiasFreeModelWritesZeroBiasesForHf) {
  TempDir tmp;
  const std::string dir = tmp / "ckpt";
  const ModelConfig config = small_config(false);
  const ParamTable table(config);
  const std::vector<float> params = make_params(config, table);
  save_checkpoint(dir, config, table, params.data(), {}, {}, nlohmann::json::object());
  SafeTensorsReader r(dir + "/model.safetensors");
  std::vector<float> b(3 * config.n_embd, 1.0f);
  r.read_f32("h.0.attn.c_attn.bias", {3 * config.n_embd}, b.data());
  EXPECT_EQ(b, std::vector<float>(3 * config.n_embd, 0.0f));
  EXPECT_TRUE(r.contains("ln_f.bias"));
  std::vector<float> p(params.size());
  load_checkpoint(dir, config, table, p.data());
  EXPECT_EQ(p, params);
}

void flip_byte(const std::string& path, uint64_t at) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(at));
  char c;
  f.get(c);
  f.seekp(static_cast<std::streamoff>(at));
  f.put(static_cast<char>(c ^ 0x10));
}

TEST(Checkpoint, LoadErrorsNameTheFile) {
  TempDir tmp;
  Saved a(0.0f);
  std::vector<float> p(a.params.size()), m(a.params.size());
  auto load = [&](const std::string& dir) { load_checkpoint(dir, a.config, a.table, p.data()); };

  const std::string corrupt = tmp / "corrupt";
  a.save(corrupt, 1);
  flip_byte(corrupt + "/model.safetensors", fs::file_size(corrupt + "/model.safetensors") - 5);
  expect_error([&] { load(corrupt); }, {corrupt + "/model.safetensors", "corrupted", "CRC-32C"});

  const std::string truncated = tmp / "truncated";
  a.save(truncated, 1);
  fs::resize_file(truncated + "/optimizer.safetensors", 100);
  expect_error([&] { load(truncated); }, {truncated + "/optimizer.safetensors", "100 bytes"});

  const std::string missing = tmp / "missing";
  a.save(missing, 1);
  fs::remove(missing + "/state.json");
  expect_error([&] { load(missing); }, {missing + "/state.json", "missing"});

  const std::string no_manifest = tmp / "no_manifest";
  a.save(no_manifest, 1);
  fs::remove(no_manifest + "/manifest.json");
  expect_error([&] { load(no_manifest); }, {no_manifest + "/manifest.json", "not a complete"});

  const std::string newer = tmp / "newer";
  a.save(newer, 1);
  auto manifest = nlohmann::json::parse(read_text_file(newer + "/manifest.json"));
  manifest["format_version"] = kCheckpointFormatVersion + 1;
  write_text_file(newer + "/manifest.json", manifest.dump());
  expect_error([&] { load(newer); }, {newer + "/manifest.json", "newer", "update nanogpt.cpp"});

  expect_error([&] { load(tmp / "nowhere"); }, {tmp / "nowhere", "does not exist"});

  const std::string arch = tmp / "arch";
  a.save(arch, 1);
  ModelConfig other = a.config;
  other.n_layer = 3;
  other.n_embd = 32;
  const ParamTable other_table(other);
  std::vector<float> q(other_table.total_numel());
  expect_error([&] { load_checkpoint(arch, other, other_table, q.data()); },
               {arch, "n_layer: checkpoint 2, expected 3", "n_embd: checkpoint 16, expected 32"});

  expect_error(
      [&] {
        load_checkpoint(arch, a.config, a.table, p.data(), {{"momentum", m.data()}});
      },
      {arch + "/optimizer.safetensors", "no optimizer state 'momentum'", "m,v"});
}

TEST(Checkpoint, RefusesToReplaceANonCheckpointFolder) {
  TempDir tmp;
  const std::string dir = tmp / "mydata";
  fs::create_directories(dir);
  write_text_file(dir + "/precious.txt", "keep me");
  Saved a(0.0f);
  expect_error([&] { a.save(dir, 1); }, {dir, "not a checkpoint"});
  EXPECT_EQ(read_text_file(dir + "/precious.txt"), "keep me");
}

// A failure at any stage (thrown by the hook, as an I/O error would be) leaves the previous
// checkpoint loadable and no temporary folder behind.
TEST(Checkpoint, FailedWriteKeepsPreviousCheckpoint) {
  TempDir tmp;
  const std::string dir = tmp / "ckpt";
  Saved a(0.0f), b(3.0f);
  a.save(dir, 1);
  for (const std::string stage : {"tmp_created", "model.safetensors", "config.json",
                                  "optimizer.safetensors", "state.json", "manifest.json"}) {
    SCOPED_TRACE(stage);
    expect_error(
        [&] {
          b.save(dir, 2, [&](const std::string& s) {
            if (s == stage) fail("injected failure at {}", s);
          });
        },
        {"injected failure at " + stage});
    EXPECT_EQ(a.load_and_check(dir), 1);
    EXPECT_FALSE(fs::exists(dir + ".tmp-" + std::to_string(::getpid())));
  }
  b.save(dir, 2);
  EXPECT_EQ(b.load_and_check(dir), 2);
}

// A crash (the process dies at a stage) leaves either the previous or the new checkpoint loadable;
// the next save cleans up the crashed write's leftovers.
TEST(Checkpoint, CrashAtAnyStageLeavesALoadableCheckpoint) {
  GTEST_FLAG_SET(death_test_style, "fast");  // fork: the child shares our paths
  TempDir tmp;
  const std::string dir = tmp / "ckpt";
  Saved a(0.0f), b(3.0f);
  a.save(dir, 1);
  struct Case {
    const char* stage;
    int expect_iter;  // which checkpoint must load afterwards
  };
  for (const Case c : {Case{"model.safetensors", 1}, Case{"manifest.json", 1},
                       Case{"old_moved_aside", 1}, Case{"new_in_place", 2}}) {
    SCOPED_TRACE(c.stage);
    const std::string stage = c.stage;
    EXPECT_EXIT(b.save(dir, 2,
                       [&](const std::string& s) {
                         if (s == stage) _exit(42);
                       }),
                ::testing::ExitedWithCode(42), "");
    if (stage == "old_moved_aside") {
      EXPECT_FALSE(fs::exists(dir));  // the crash window the .old recovery exists for
      EXPECT_TRUE(fs::exists(dir + ".old"));
    }
    if (c.expect_iter == 1) {
      EXPECT_EQ(a.load_and_check(dir), 1);
    } else {
      EXPECT_EQ(b.load_and_check(dir), 2);
    }
    // Restore the state "a saved" for the next case; this save also removes stale leftovers.
    a.save(dir, 1);
    EXPECT_EQ(a.load_and_check(dir), 1);
    for (const auto& e : fs::directory_iterator(tmp.path())) {
      EXPECT_EQ(e.path().filename(), "ckpt") << "leftover " << e.path();
    }
  }
}

// Regression tests from fuzzing (fuzz/checkpoint_manifest_fuzz.cpp): every malformed manifest is a
// nanogpt::Error naming the file and the key (nlohmann's type_error / out_of_range used to escape).
TEST(CheckpointFuzzRegression, ManifestErrorsNameFileAndKey) {
  const nlohmann::json entry = {{"bytes", 10}, {"crc32c", "0a1b2c3d"}};
  const nlohmann::json good = {{"format", "nanogpt.cpp checkpoint"},
                               {"format_version", 1},
                               {"files",
                                {{"model.safetensors", entry},
                                 {"config.json", entry},
                                 {"optimizer.safetensors", entry},
                                 {"state.json", entry}}}};
  const CheckpointManifest m = parse_checkpoint_manifest(good.dump(), "manifest.json");
  EXPECT_EQ(m.files.at("state.json").bytes, 10u);
  EXPECT_EQ(m.files.at("state.json").crc32c, 0x0a1b2c3du);
  auto with = [&](const nlohmann::json::json_pointer& ptr, const nlohmann::json& v) {
    nlohmann::json j = good;
    j[ptr] = v;
    return j.dump();
  };
  using P = nlohmann::json::json_pointer;
  const std::string f = "m.json";
  expect_error([&] { parse_checkpoint_manifest(with(P("/files/state.json/crc32c"), 5), f); },
               {"'m.json'", "state.json", "'crc32c' must be a string"});
  expect_error([&] { parse_checkpoint_manifest(with(P("/files/state.json/crc32c"), "xyz"), f); },
               {"'m.json'", "state.json", "not 8 hex digits"});
  expect_error(
      [&] { parse_checkpoint_manifest(with(P("/files/state.json/crc32c"), "+0a1b2c3"), f); },
      {"not 8 hex digits"});
  expect_error([&] { parse_checkpoint_manifest(with(P("/files/state.json/bytes"), -1), f); },
               {"'m.json'", "state.json", "'bytes' must be an integer", "-1"});
  expect_error([&] { parse_checkpoint_manifest(with(P("/files/state.json"), 3), f); },
               {"'m.json'", "state.json", "expected a JSON object"});
  expect_error([&] { parse_checkpoint_manifest(with(P("/files/state.json/bytes"), 1.5), f); },
               {"'bytes' must be an integer"});
  expect_error([&] { parse_checkpoint_manifest(with(P("/files/..~1escape"), entry), f); },
               {"'m.json'", "not a file name inside the checkpoint directory"});
  expect_error([&] { parse_checkpoint_manifest(with(P("/files"), nlohmann::json::array()), f); },
               {"'m.json'", "\"files\" must be an object"});
  expect_error([&] { parse_checkpoint_manifest(with(P("/format"), 7), f); },
               {"'m.json'", "is not a nanogpt.cpp checkpoint manifest"});
  expect_error([&] { parse_checkpoint_manifest(with(P("/format_version"), int64_t{1} << 40), f); },
               {"'m.json'", "newer than this build reads"});
  expect_error([&] { parse_checkpoint_manifest(with(P("/format_version"), "1"), f); },
               {"'m.json'", "'format_version' must be an integer"});
  expect_error([&] { parse_checkpoint_manifest("[]", f); }, {"'m.json'", "is not a"});
  expect_error([&] { parse_checkpoint_manifest("{", f); }, {"'m.json'", "not valid JSON"});
}

// config.json is read (and the arena sized from it) before the tensors: a config.json describing
// a bigger model than model.safetensors holds fails there, before any allocation.
TEST(CheckpointFuzzRegression, ConfigBiggerThanTheModelFileFailsBeforeAllocation) {
  TempDir tmp;
  Saved a(0.0f);
  const std::string dir = tmp / "ckpt";
  a.save(dir, 1);
  EXPECT_EQ(read_checkpoint_config(dir).n_layer, 2);
  ModelConfig big = a.config;
  big.n_layer = 12;  // GPT-2 124M's shape: 85M parameters, 340 MB as F32
  big.n_embd = 768;
  big.n_head = 12;
  const FileDigest d = write_text_file(dir + "/config.json", hf_config_json(big).dump(2));
  auto manifest = nlohmann::json::parse(read_text_file(dir + "/manifest.json"));
  manifest["files"]["config.json"] = {{"bytes", d.bytes},
                                      {"crc32c", fmt::format("{:08x}", d.crc32c)}};
  write_text_file(dir + "/manifest.json", manifest.dump());
  expect_error([&] { read_checkpoint_config(dir); },
               {dir + "/config.json", "parameters", dir + "/model.safetensors", "bytes"});
}

}  // namespace
}  // namespace nanogpt
