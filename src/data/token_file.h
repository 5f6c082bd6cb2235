// TokenFile: one file of uint16 token ids, read-only, either nanoGPT's headerless .bin or an llm.c
// shard (256 x int32 header: magic 20240520, version 1, token count; tokens from byte 1024).
// The format is detected by the first int32; the tokens are held in RAM (preload) or mmap'ed.
#pragma once

#include <cstdint>
#include <string>

#include "core/buffer.h"
#include "core/mapped_file.h"

namespace nanogpt {

inline constexpr int32_t kLlmcShardMagic = 20240520;
inline constexpr int32_t kLlmcShardVersion = 1;  // uint16 tokens
inline constexpr int32_t kLlmcModelMagic = 20240326;
inline constexpr int32_t kLlmcTokenizerMagic = 20240328;
inline constexpr int kLlmcHeaderInts = 256;
inline constexpr int64_t kLlmcHeaderBytes = 1024;

// On-disk layout. kAuto (reading only): an llm.c shard if the first int32 is 20240520, else raw.
// A raw file would be misread as a shard only if its first two tokens were (55432, 308), i.e. the
// bytes of 20240520; 55432 is above GPT-2's vocab (50257), so real GPT-2/char data never starts so.
// Even then the shard checks (version 1, exact size) fail loudly; format 'nanogpt' forces raw.
enum class TokenFormat { kAuto, kNanogpt, kLlmc };
enum class DataMode { kPreload, kMmap };

// "auto" | "nanogpt" | "llmc" -> TokenFormat; `key` names the config key in errors.
TokenFormat parse_token_format(const std::string& s, const std::string& key = "format");
std::string token_format_name(TokenFormat f);
// "preload" | "mmap" -> DataMode ('auto' is resolved first: data/data_mode.h).
DataMode parse_data_mode(const std::string& s, const std::string& key = "data_mode");

struct TokenFileOptions {
  DataMode mode = DataMode::kPreload;
  TokenFormat format = TokenFormat::kAuto;
  int64_t min_tokens = 0;  // e.g. block_size + 1; fewer is an error
  int vocab_size = 0;      // > 0: every token id must be < vocab_size (checked at open)
  AccessPattern access = AccessPattern::kRandom;  // madvise hint in mmap mode
};

class TokenFile {
 public:
  TokenFile() = default;
  // Opens and validates `path`; throws nanogpt::Error naming the file and the problem.
  TokenFile(const std::string& path, const TokenFileOptions& options);
  TokenFile(TokenFile&&) noexcept = default;
  TokenFile& operator=(TokenFile&&) noexcept = default;

  const uint16_t* tokens() const { return tokens_; }  // (size())
  int64_t size() const { return size_; }
  TokenFormat format() const { return format_; }  // kNanogpt or kLlmc (never kAuto)
  DataMode mode() const { return mode_; }
  const std::string& path() const { return path_; }
  // Largest token id in the file (one vectorized pass; touches every page in mmap mode).
  uint16_t max_token() const;
  // MADV_WILLNEED for tokens [begin, begin + count) in mmap mode; no-op in preload mode.
  void prefetch(int64_t begin, int64_t count) const;
  // mmap mode: drops the file's pages from this process's RSS (they stay in the page cache);
  // no-op in preload mode.
  void release_pages() const;

 private:
  std::string path_;
  TokenFormat format_ = TokenFormat::kNanogpt;
  DataMode mode_ = DataMode::kPreload;
  Buffer<uint16_t> buffer_;  // preload mode: the tokens
  MappedFile map_;           // mmap mode: the whole file
  int64_t data_offset_ = 0;  // bytes before the first token in the file
  const uint16_t* tokens_ = nullptr;
  int64_t size_ = 0;
};

// Largest value in data[0, n) (0 if n == 0); OpenMP + SIMD max-reduction.
uint16_t max_token_id(const uint16_t* data, int64_t n);
// Index of the first value >= limit in data[0, n), or -1.
int64_t find_first_token_at_least(const uint16_t* data, int64_t n, int limit);

}  // namespace nanogpt
