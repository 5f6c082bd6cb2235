// Checkpoint directories: model.safetensors (HF GPT-2 names and layout, loadable by transformers
// with the config.json beside it), optimizer.safetensors (state arenas per parameter, our layout),
// state.json (the caller's training state), and manifest.json (format version, size and CRC-32C of
// every file), written atomically (io/atomic_dir.h) and verified on load.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "io/atomic_dir.h"
#include "io/file_util.h"
#include "model/params.h"

namespace nanogpt {

inline constexpr int kCheckpointFormatVersion = 1;

// One optimizer state arena (table.total_numel() floats, parameter layout), e.g. AdamW's "m".
// Stored as tensors "<name>.<parameter name>" in optimizer.safetensors.
struct ConstStateArena {
  std::string name;
  const float* data = nullptr;
};
struct StateArena {
  std::string name;
  float* data = nullptr;
  // Optional state: when set, a checkpoint without this arena is no error (*found says whether it
  // was there; the arena is left as it was when not).
  bool* found = nullptr;
};

// manifest.json: the format version and the size and CRC-32C of every file of the checkpoint.
struct CheckpointManifest {
  int format_version = 0;
  std::map<std::string, FileDigest> files;  // file name (in the checkpoint directory) -> digest
};

// Parses and validates manifest.json's text (format name and version, the four required files,
// each entry's bytes and crc32c); throws nanogpt::Error naming `path` and the key.
CheckpointManifest parse_checkpoint_manifest(std::string_view text, const std::string& path);

struct CheckpointSaveOptions {
  FaultHook fault_hook;  // tests: fail or crash at a named stage (see atomic_dir.h)
};

// Writes the checkpoint into `dir` atomically: on any error the previous checkpoint in `dir` stays
// intact and loadable, and the error names the file. optimizer_metadata is stored as
// optimizer.safetensors' __metadata__ (e.g. {"optimizer": "adamw", "steps": "120"}).
void save_checkpoint(const std::string& dir, const ModelConfig& config, const ParamTable& table,
                     const float* params, const std::vector<ConstStateArena>& optimizer,
                     const std::map<std::string, std::string>& optimizer_metadata,
                     const nlohmann::json& state, const CheckpointSaveOptions& options = {});

// The model config a checkpoint was written with (to build the model before loading).
// Recovers from `<dir>.old` when `dir` is missing. Verifies the manifest and config.json only.
ModelConfig read_checkpoint_config(const std::string& dir);

struct LoadedCheckpoint {
  std::string dir;  // where it was read from: `dir`, or `<dir>.old` after an interrupted save
  nlohmann::json state;
  std::map<std::string, std::string> optimizer_metadata;
};

// Arena elements [begin, end) (end < 0: to the end of the arena).
struct ArenaRange {
  int64_t begin = 0;
  int64_t end = -1;
};

// Verifies every file's size and checksum and the format version, checks that the checkpoint's
// architecture equals `expected` (naming each differing key), fills params (arena laid out by
// `table`) and each requested optimizer arena (empty = do not load optimizer state). Throws
// nanogpt::Error naming the file on any problem. With ranges, params (and each optimizer arena)
// hold only the elements of params_range (optimizer_range), and only those are read from the
// files: a ZeRO-1 rank reads its shard and never holds the whole state.
LoadedCheckpoint load_checkpoint(const std::string& dir, const ModelConfig& expected,
                                 const ParamTable& table, float* params,
                                 const std::vector<StateArena>& optimizer = {},
                                 ArenaRange params_range = {}, ArenaRange optimizer_range = {});

}  // namespace nanogpt
