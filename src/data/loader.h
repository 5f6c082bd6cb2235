// DataLoader: batches (inputs (B,T), targets (B,T) as int32) from one or more token files.
// Random sampling (nanoGPT) or sequential (llm.c), rank-aware, with a saveable LoaderState so a
// resumed run sees exactly the batches it would have seen. Train and val are two DataLoaders, e.g.
//   DataLoader train(dataset_files(dir, "train"), cfg);
//   LoaderConfig vcfg = cfg; vcfg.seed = cfg.seed + 1;  DataLoader val(dataset_files(dir, "val"),
//   vcfg);
// and val.reset() before each evaluation gives the same eval batches every time (llm.c's habit).
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/rng.h"
#include "data/data_mode.h"
#include "data/loader_config.h"
#include "data/token_file.h"

namespace nanogpt {

// Where a loader is in its stream. Random: the RNG words; sequential: shard and position.
struct LoaderState {
  std::array<uint64_t, 4> rng{};
  int64_t shard = 0;
  int64_t pos = 0;      // sequential: token offset of this rank's next batch in `shard`
  int64_t batches = 0;  // batches produced since the start of the stream
  // Config the state belongs to (checked on restore for sequential sampling).
  int64_t batch_size = 0;
  int64_t block_size = 0;
  int world_size = 1;
  int rank = 0;

  // RNG words are stored as decimal strings (exact in any JSON reader).
  nlohmann::json to_json() const;
  // `origin` names the file/key in errors.
  static LoaderState from_json(const nlohmann::json& j, const std::string& origin);
  bool operator==(const LoaderState&) const = default;
};

class DataLoader {
 public:
  // Opens and validates the file(s) (preload or mmap); throws nanogpt::Error naming the file.
  DataLoader(const std::vector<std::string>& paths, const LoaderConfig& config);
  DataLoader(const std::string& path, const LoaderConfig& config)
      : DataLoader(std::vector<std::string>{path}, config) {}

  // Fills inputs (B,T) and targets (B,T) (row-major int32, caller-owned) with the next batch:
  // targets[b][t] is the token after inputs[b][t].
  void next_batch(int32_t* inputs, int32_t* targets);
  // Back to the start of the stream (as freshly constructed).
  void reset();
  // Advances by `n` batches without copying tokens (for resuming from a batch count).
  void skip(int64_t n);

  LoaderState state() const;
  void set_state(const LoaderState& s);  // throws if `s` does not fit this loader

  int64_t batch_size() const { return config_.batch_size; }
  int64_t block_size() const { return config_.block_size; }
  int64_t num_tokens() const { return total_tokens_; }  // over all files
  int num_files() const { return static_cast<int>(files_.size()); }
  const TokenFile& file(int i) const { return files_[i]; }
  const LoaderConfig& config() const { return config_; }
  // The data_mode this loader runs in and why ("mmap (auto: 10.0 GiB of token files, ...)").
  const std::string& mode_description() const { return mode_.why; }

 private:
  bool sequential() const { return sequential_; }
  // Random: draws one start offset; returns the file index and offset.
  std::pair<int, int64_t> draw_offset();
  void advance_sequential();
  uint64_t rank_seed() const;

  // mmap mode: drops the files' pages from RSS after every kReleaseBytes of rows read.
  void release_pages_now_and_then(int64_t bytes_read);
  static constexpr int64_t kReleaseBytes = int64_t{256} << 20;
  static constexpr int64_t kFaultAroundBytes = int64_t{64} << 10;

  LoaderConfig config_;
  DataModeChoice mode_;
  int64_t read_since_release_ = 0;  // bytes of rows read since the pages were last released
  bool sequential_ = false;
  std::vector<TokenFile> files_;
  std::vector<int64_t> start_ends_;  // random: cumulative count of valid start offsets per file
  int64_t total_tokens_ = 0;
  Rng rng_;
  int64_t shard_ = 0;
  int64_t pos_ = 0;
  int64_t batches_ = 0;
  std::vector<const uint16_t*> rows_;  // random: this batch's row starts (scratch)
};

}  // namespace nanogpt
