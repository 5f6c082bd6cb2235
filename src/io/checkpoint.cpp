// save_checkpoint / load_checkpoint: files, manifest with checksums, version and architecture
// checks.
#include "io/checkpoint.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <filesystem>

#include "core/check.h"
#include "core/json_util.h"
#include "io/file_util.h"
#include "io/hf_gpt2.h"
#include "io/safetensors.h"

namespace nanogpt {
namespace {

constexpr const char* kManifest = "manifest.json";
constexpr const char* kModel = "model.safetensors";
constexpr const char* kConfig = "config.json";
constexpr const char* kOptimizer = "optimizer.safetensors";
constexpr const char* kState = "state.json";
constexpr const char* kFormatName = "nanogpt.cpp checkpoint";

nlohmann::json digest_json(const FileDigest& d) {
  return {{"bytes", d.bytes}, {"crc32c", fmt::format("{:08x}", d.crc32c)}};
}

nlohmann::json parse_json_file(const std::string& path) {
  return parse_json(read_text_file(path), path);
}

// Reads manifest.json of `dir` and verifies every listed file (or only `only` when not empty).
void verify_checkpoint_files(const std::string& dir, const std::string& only = "") {
  const std::string manifest_path = dir + "/" + kManifest;
  CHECK(std::filesystem::exists(manifest_path),
        "'{}' is missing: '{}' is not a complete "
        "checkpoint (written by an older tool or interrupted?)",
        manifest_path, dir);
  const CheckpointManifest m =
      parse_checkpoint_manifest(read_text_file(manifest_path), manifest_path);
  for (const auto& [name, expected] : m.files) {
    if (!only.empty() && name != only) continue;
    const std::string path = dir + "/" + name;
    CHECK(std::filesystem::exists(path), "checkpoint file '{}' is missing (listed in '{}')", path,
          manifest_path);
    const FileDigest d = digest_file(path);
    CHECK(d.bytes == expected.bytes,
          "checkpoint file '{}' has {} bytes but the manifest records {} "
          "(truncated or modified)",
          path, d.bytes, expected.bytes);
    CHECK(d.crc32c == expected.crc32c,
          "checkpoint file '{}' is corrupted: CRC-32C "
          "{:08x}, manifest records {:08x}",
          path, d.crc32c, expected.crc32c);
  }
}

ModelConfig read_config(const std::string& dir) {
  const std::string path = dir + "/" + kConfig;
  return parse_hf_config(read_text_file(path), path);
}

// "n_layer: checkpoint 6, expected 4; ..." for the architecture keys that differ; "" if none.
std::string architecture_diff(const ModelConfig& found, const ModelConfig& expected) {
  std::vector<std::string> diffs;
  auto cmp = [&](const char* key, auto a, auto b) {
    if (a != b) diffs.push_back(fmt::format("{}: checkpoint {}, expected {}", key, a, b));
  };
  cmp("n_layer", found.n_layer, expected.n_layer);
  cmp("n_head", found.n_head, expected.n_head);
  cmp("n_embd", found.n_embd, expected.n_embd);
  cmp("block_size", found.block_size, expected.block_size);
  cmp("vocab_size", found.vocab_size, expected.vocab_size);
  cmp("bias", found.bias, expected.bias);
  cmp("gelu", found.gelu, expected.gelu);
  cmp("norm", found.norm, expected.norm);
  cmp("position", found.position, expected.position);
  cmp("rope_theta", found.rope_theta, expected.rope_theta);
  cmp("qk_norm", found.qk_norm, expected.qk_norm);
  cmp("qk_norm_gain", found.qk_norm_gain, expected.qk_norm_gain);
  cmp("activation", found.activation, expected.activation);
  cmp("tie_embeddings", found.tie_embeddings, expected.tie_embeddings);
  cmp("logit_softcap", found.logit_softcap, expected.logit_softcap);
  cmp("unet_skips", found.unet_skips, expected.unet_skips);
  cmp("attn_gain", found.attn_gain, expected.attn_gain);
  return fmt::format("{}", fmt::join(diffs, "; "));
}

}  // namespace

CheckpointManifest parse_checkpoint_manifest(std::string_view text,
                                             const std::string& manifest_path) {
  const nlohmann::json m = parse_json(text, manifest_path);
  const bool ours = m.is_object() && m.contains("format") && m["format"] == kFormatName;
  CHECK(ours, "'{}' is not a {} manifest (its \"format\" must be \"{}\")", manifest_path,
        kFormatName, kFormatName);
  CheckpointManifest out;
  const int64_t version =
      json_integer<int64_t>(m, "format_version", fmt::format("'{}'", manifest_path));
  CHECK(version <= kCheckpointFormatVersion,
        "'{}': checkpoint format version {} is newer than "
        "this build reads (up to {}); update nanogpt.cpp to load it",
        manifest_path, version, kCheckpointFormatVersion);
  CHECK(version >= 1, "'{}': invalid checkpoint format version {} (expected 1..{})", manifest_path,
        version, kCheckpointFormatVersion);
  out.format_version = static_cast<int>(version);
  const nlohmann::json& files = json_at(m, "files", fmt::format("'{}'", manifest_path));
  CHECK(files.is_object(),
        "'{}': \"files\" must be an object {{name: {{bytes, crc32c}}}}, found {}", manifest_path,
        files.type_name());
  for (const char* required : {kModel, kConfig, kOptimizer, kState}) {
    CHECK(files.contains(required), "'{}' does not list '{}'", manifest_path, required);
  }
  for (auto it = files.begin(); it != files.end(); ++it) {
    const std::string& name = it.key();
    const std::string origin = fmt::format("'{}': files.\"{}\"", manifest_path, name);
    // Names are plain file names inside the checkpoint directory (nothing outside it is read).
    CHECK(!name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
              name.find('\0') == std::string::npos,
          "{}: not a file name inside the checkpoint directory", origin);
    const uint64_t bytes = json_integer<uint64_t>(it.value(), "bytes", origin);
    const std::string crc = json_string(it.value(), "crc32c", origin);
    uint32_t value = 0;
    const auto [end, ec] = std::from_chars(crc.data(), crc.data() + crc.size(), value, 16);
    CHECK(crc.size() == 8 && ec == std::errc() && end == crc.data() + crc.size(),
          "{}: crc32c \"{}\" is not 8 hex digits (e.g. \"0a1b2c3d\")", origin, crc);
    out.files[name] = {bytes, value};
  }
  return out;
}

void save_checkpoint(const std::string& dir, const ModelConfig& config, const ParamTable& table,
                     const float* params, const std::vector<ConstStateArena>& optimizer,
                     const std::map<std::string, std::string>& optimizer_metadata,
                     const nlohmann::json& state, const CheckpointSaveOptions& options) {
  AtomicDirWriter writer(dir, kManifest, options.fault_hook);
  nlohmann::ordered_json files = nlohmann::ordered_json::object();

  files[kModel] = digest_json(write_hf_safetensors(writer.tmp_path(kModel), config, table, params,
                                                   {{"producer", "nanogpt.cpp"}}));
  writer.stage(kModel);
  files[kConfig] =
      digest_json(write_text_file(writer.tmp_path(kConfig), hf_config_json(config).dump(2) + "\n"));
  writer.stage(kConfig);

  SafeTensorsWriter opt;
  std::map<std::string, std::string> meta = optimizer_metadata;
  std::vector<std::string> names;
  for (const auto& arena : optimizer) {
    CHECK(arena.data != nullptr, "save_checkpoint: optimizer state '{}' has no data", arena.name);
    names.push_back(arena.name);
    for (const auto& s : table.specs()) {
      opt.add(arena.name + "." + s.name, s.shape, arena.data + s.offset);
    }
  }
  meta["state_names"] = fmt::format("{}", fmt::join(names, ","));
  opt.set_metadata(meta);
  files[kOptimizer] = digest_json(opt.write(writer.tmp_path(kOptimizer)));
  writer.stage(kOptimizer);

  files[kState] = digest_json(write_text_file(writer.tmp_path(kState), state.dump(2) + "\n"));
  writer.stage(kState);

  nlohmann::ordered_json manifest = {
      {"format", kFormatName}, {"format_version", kCheckpointFormatVersion}, {"files", files}};
  write_text_file(writer.tmp_path(kManifest), manifest.dump(2) + "\n");
  writer.stage(kManifest);
  writer.commit();
}

ModelConfig read_checkpoint_config(const std::string& dir_in) {
  const std::string dir = resolve_committed_dir(dir_in);
  verify_checkpoint_files(dir, kConfig);  // the big files are verified by load_checkpoint
  const ModelConfig config = read_config(dir);
  // Callers size the parameter arena from this config before load_checkpoint reads the tensors:
  // a config.json describing a bigger model than model.safetensors (F32) holds stops here.
  const std::string model_path = dir + "/" + kModel;
  std::error_code ec;
  const uintmax_t model_bytes = std::filesystem::file_size(model_path, ec);
  if (!ec) {
    int64_t numel = 0;
    const ParamTable table(config);
    for (const auto& s : table.specs()) numel += s.numel;
    CHECK(
        static_cast<uintmax_t>(numel) * 4 <= model_bytes,
        "'{}/{}' describes a model of {} parameters ({} bytes as F32) but '{}' has only {} bytes; "
        "the checkpoint is corrupted or mixed from two runs",
        dir, kConfig, numel, numel * 4, model_path, model_bytes);
  }
  return config;
}

LoadedCheckpoint load_checkpoint(const std::string& dir_in, const ModelConfig& expected,
                                 const ParamTable& table, float* params,
                                 const std::vector<StateArena>& optimizer, ArenaRange params_range,
                                 ArenaRange optimizer_range) {
  for (ArenaRange* r : {&params_range, &optimizer_range}) {
    if (r->end < 0) r->end = table.total_numel();
    CHECK(0 <= r->begin && r->begin <= r->end && r->end <= table.total_numel(),
          "load_checkpoint: range [{}, {}) is not inside the arena of {} elements", r->begin,
          r->end, table.total_numel());
  }
  const bool whole_params = params_range.begin == 0 && params_range.end == table.total_numel();
  LoadedCheckpoint out;
  out.dir = resolve_committed_dir(dir_in);
  verify_checkpoint_files(out.dir);
  const ModelConfig found = read_config(out.dir);
  const std::string diff = architecture_diff(found, expected);
  CHECK(diff.empty(),
        "checkpoint '{}' does not match the model config: {} (set these keys to "
        "the checkpoint's values, or start from scratch)",
        out.dir, diff);

  SafeTensorsReader model(out.dir + "/" + kModel);
  if (whole_params) {
    read_hf_params(model, expected, table, params);
  } else {
    read_hf_params_range(model, expected, table, params_range.begin, params_range.end, params);
  }

  SafeTensorsReader opt(out.dir + "/" + kOptimizer);
  out.optimizer_metadata = opt.metadata();
  for (const auto& arena : optimizer) {
    const std::string first = arena.name + "." + table.specs().front().name;
    if (arena.found) {
      *arena.found = opt.contains(first);
      if (!*arena.found) continue;
    }
    CHECK(opt.contains(first),
          "'{}' holds no optimizer state '{}' (it has: '{}'): it was written by optimizer '{}'; "
          "resume with --optimizer={} (or start a new out_dir)",
          opt.path(), arena.name,
          out.optimizer_metadata.count("state_names") ? out.optimizer_metadata["state_names"] : "",
          out.optimizer_metadata.count("optimizer") ? out.optimizer_metadata["optimizer"] : "?",
          out.optimizer_metadata.count("optimizer") ? out.optimizer_metadata["optimizer"] : "?");
    const int64_t begin = optimizer_range.begin, end = optimizer_range.end;
    std::fill(arena.data, arena.data + (end - begin), 0.0f);  // arena padding
    for (const auto& s : table.specs()) {
      const int64_t lo = std::clamp<int64_t>(begin - s.offset, 0, s.numel);
      const int64_t hi = std::clamp<int64_t>(end - s.offset, 0, s.numel);
      if (lo >= hi) continue;
      opt.read_f32_elements(arena.name + "." + s.name, s.shape, lo, hi - lo,
                            arena.data + (s.offset + lo - begin));
    }
  }
  out.state = parse_json_file(out.dir + "/" + kState);
  return out;
}

}  // namespace nanogpt
