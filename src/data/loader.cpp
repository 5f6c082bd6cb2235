// DataLoader: random (nanoGPT) and sequential (llm.c) batches, rank streams, state save/restore.
#include "data/loader.h"

#include <algorithm>
#include <charconv>
#include <filesystem>

#include "core/check.h"
#include "core/json_util.h"
#include "data/widen.h"

namespace nanogpt {

nlohmann::json LoaderState::to_json() const {
  nlohmann::json words = nlohmann::json::array();
  for (uint64_t w : rng) words.push_back(std::to_string(w));
  return {{"rng", words},
          {"shard", shard},
          {"pos", pos},
          {"batches", batches},
          {"batch_size", batch_size},
          {"block_size", block_size},
          {"world_size", world_size},
          {"rank", rank}};
}

LoaderState LoaderState::from_json(const nlohmann::json& j, const std::string& origin) {
  LoaderState s;
  const nlohmann::json& words = json_at(j, "rng", origin);
  CHECK(words.is_array() && words.size() == 4,
        "{}: loader state 'rng' must be 4 words (decimal strings), found {}", origin, words.dump());
  for (size_t i = 0; i < 4; ++i) {
    const std::string w = words[i].is_string() ? words[i].get<std::string>() : "";
    const auto [end, ec] = std::from_chars(w.data(), w.data() + w.size(), s.rng[i]);
    CHECK(!w.empty() && ec == std::errc() && end == w.data() + w.size(),
          "{}: loader state 'rng' word {} must be a decimal uint64 string, found {}", origin, i,
          words[i].dump());
  }
  CHECK(s.rng != decltype(s.rng){},
        "{}: loader state 'rng' words are all 0, which is not a valid xoshiro256** state", origin);
  s.shard = json_integer<int64_t>(j, "shard", origin, 0);
  s.pos = json_integer<int64_t>(j, "pos", origin, 0);
  s.batches = json_integer<int64_t>(j, "batches", origin, 0);
  s.batch_size = json_integer<int64_t>(j, "batch_size", origin, 0);
  s.block_size = json_integer<int64_t>(j, "block_size", origin, 0);
  s.world_size = json_integer<int>(j, "world_size", origin, 1);
  s.rank = json_integer<int>(j, "rank", origin, 0, s.world_size - 1);
  return s;
}

DataLoader::DataLoader(const std::vector<std::string>& paths, const LoaderConfig& config)
    : config_(config) {
  config_.validate();
  CHECK(!paths.empty(), "DataLoader: no token files given");
  sequential_ = config_.sampling == "sequential";
  const int64_t B = config_.batch_size, T = config_.block_size, W = config_.world_size;
  int64_t file_bytes = 0;
  for (const auto& path : paths) {
    std::error_code ec;
    const auto bytes = std::filesystem::file_size(path, ec);
    if (!ec) file_bytes += static_cast<int64_t>(bytes);  // (a missing file: TokenFile says so)
  }
  mode_ = resolve_data_mode(config_.data_mode, file_bytes,
                            config_.data_mode == "auto" ? memory_available_bytes() : 0);
  TokenFileOptions options;
  options.mode = mode_.mode;
  options.format = parse_token_format(config_.format);
  options.vocab_size = config_.vocab_size;
  options.access = sequential_ ? AccessPattern::kSequential : AccessPattern::kRandom;
  // Random needs one sequence of T + 1; sequential needs one step of all ranks: W*B*T + 1.
  options.min_tokens = sequential_ ? W * B * T + 1 : T + 1;
  int64_t starts = 0;
  for (const auto& path : paths) {
    try {
      files_.emplace_back(path, options);
    } catch (const Error& e) {
      if (!sequential_) throw;
      fail(
          "{} (sequential sampling reads world_size * batch_size * block_size + 1 = {} * {} * "
          "{} + 1 tokens per step)",
          e.what(), W, B, T);
    }
    total_tokens_ += files_.back().size();
    starts += files_.back().size() - T;  // nanoGPT: randint(len(data) - block_size)
    start_ends_.push_back(starts);
  }
  reset();
}

uint64_t DataLoader::rank_seed() const {
  // Distinct streams per (seed, rank); not seed + rank, which would make (s, 1) == (s + 1, 0).
  return splitmix64(static_cast<uint64_t>(config_.seed)) ^
         splitmix64(0xD1B54A32D192ED03ull + static_cast<uint64_t>(config_.rank));
}

void DataLoader::reset() {
  rng_.reseed(rank_seed());
  shard_ = 0;
  pos_ = static_cast<int64_t>(config_.rank) * config_.batch_size * config_.block_size;
  batches_ = 0;
  if (sequential_) files_[0].prefetch(pos_, config_.batch_size * config_.block_size + 1);
}

std::pair<int, int64_t> DataLoader::draw_offset() {
  const int64_t g =
      static_cast<int64_t>(rng_.uniform_int(static_cast<uint64_t>(start_ends_.back())));
  if (files_.size() == 1) return {0, g};
  const int f = static_cast<int>(std::upper_bound(start_ends_.begin(), start_ends_.end(), g) -
                                 start_ends_.begin());
  return {f, g - (f == 0 ? 0 : start_ends_[f - 1])};
}

void DataLoader::advance_sequential() {
  const int64_t BT = config_.batch_size * config_.block_size;
  const int64_t step = static_cast<int64_t>(config_.world_size) * BT;
  pos_ += step;
  const int64_t base = pos_ - static_cast<int64_t>(config_.rank) * BT;  // same on every rank
  if (base + step + 1 > files_[shard_].size()) {  // the next step of all ranks does not fit: wrap
    shard_ = (shard_ + 1) % static_cast<int64_t>(files_.size());
    pos_ = static_cast<int64_t>(config_.rank) * BT;
  }
}

void DataLoader::next_batch(int32_t* inputs, int32_t* targets) {
  const int64_t B = config_.batch_size, T = config_.block_size;
  if (sequential_) {
    const uint16_t* src = files_[shard_].tokens() + pos_;  // (B*T + 1)
    widen_tokens(inputs, src, B * T);
    widen_tokens(targets, src + 1, B * T);
    advance_sequential();
    files_[shard_].prefetch(pos_, B * T + 1);  // mmap: start reading the next batch
  } else {
    // Draw all rows first and prefetch their first cache lines, so the B row reads (random
    // places in a large file: cache and TLB misses) overlap instead of queueing one by one.
    rows_.resize(static_cast<size_t>(B));
    for (int64_t b = 0; b < B; ++b) {
      auto [f, i] = draw_offset();
      rows_[b] = files_[f].tokens() + i;  // (T + 1)
      __builtin_prefetch(rows_[b]);
      __builtin_prefetch(rows_[b] + 32);
    }
    for (int64_t b = 0; b < B; ++b) {
      widen_tokens(inputs + b * T, rows_[b], T);
      widen_tokens(targets + b * T, rows_[b] + 1, T);
    }
  }
  ++batches_;
  // Random rows map up to 64 KiB each (Linux maps the page cache's neighbours of a faulting page
  // too: fault_around_bytes), sequential batches their own bytes.
  release_pages_now_and_then(sequential_ ? 2 * B * T : B * kFaultAroundBytes);
}

void DataLoader::release_pages_now_and_then(int64_t bytes_read) {
  if (mode_.mode != DataMode::kMmap) return;
  // Random rows touch a page or two each, anywhere in the file: RSS would grow towards the
  // file's size. Dropping the mapped pages now and then (the page cache keeps them) bounds it.
  read_since_release_ += bytes_read;
  if (read_since_release_ < kReleaseBytes) return;
  read_since_release_ = 0;
  for (const TokenFile& f : files_) f.release_pages();
}

void DataLoader::skip(int64_t n) {
  CHECK(n >= 0, "DataLoader::skip({}): expected n >= 0", n);
  for (int64_t k = 0; k < n; ++k) {
    if (sequential_) {
      advance_sequential();
    } else {
      for (int64_t b = 0; b < config_.batch_size; ++b) draw_offset();
    }
    ++batches_;
  }
}

LoaderState DataLoader::state() const {
  LoaderState s;
  s.rng = rng_.state();
  s.shard = shard_;
  s.pos = pos_;
  s.batches = batches_;
  s.batch_size = config_.batch_size;
  s.block_size = config_.block_size;
  s.world_size = config_.world_size;
  s.rank = config_.rank;
  return s;
}

void DataLoader::set_state(const LoaderState& s) {
  const int64_t BT = config_.batch_size * config_.block_size;
  CHECK(s.rank == config_.rank,
        "loader state belongs to rank {} but this loader is rank {}; each rank restores its own "
        "state (or use skip(batches) to replay from the batch count)",
        s.rank, config_.rank);
  if (sequential_) {
    CHECK(s.batch_size == config_.batch_size && s.block_size == config_.block_size &&
              s.world_size == config_.world_size,
          "sequential loader state was saved with batch_size={} block_size={} world_size={} but "
          "this run has batch_size={} block_size={} world_size={}; use the same values to resume "
          "the data stream exactly",
          s.batch_size, s.block_size, s.world_size, config_.batch_size, config_.block_size,
          config_.world_size);
    CHECK(s.shard >= 0 && s.shard < num_files(),
          "loader state: shard {} out of range (this loader has {} files)", s.shard, num_files());
    const int64_t base = s.pos - static_cast<int64_t>(config_.rank) * BT;
    const int64_t step = static_cast<int64_t>(config_.world_size) * BT;
    CHECK(base >= 0 && base % step == 0 && base <= files_[s.shard].size() - step - 1,
          "loader state: position {} is not a valid batch start for rank {} in '{}' ({} tokens); "
          "was the state saved for a different dataset?",
          s.pos, config_.rank, files_[s.shard].path(), files_[s.shard].size());
  }
  rng_.set_state(s.rng);
  shard_ = s.shard;
  pos_ = s.pos;
  batches_ = s.batches;
}

}  // namespace nanogpt
