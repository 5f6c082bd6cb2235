// TokenFile: format detection, header/size/vocab validation, and preload or mmap of the tokens.
#include "data/token_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include "core/check.h"

namespace nanogpt {

TokenFormat parse_token_format(const std::string& s, const std::string& key) {
  if (s == "auto") return TokenFormat::kAuto;
  if (s == "nanogpt") return TokenFormat::kNanogpt;
  if (s == "llmc") return TokenFormat::kLlmc;
  fail("{} = '{}': expected 'auto', 'nanogpt' (headerless uint16 .bin) or 'llmc' (llm.c shard)",
       key, s);
}

std::string token_format_name(TokenFormat f) {
  switch (f) {
    case TokenFormat::kAuto:
      return "auto";
    case TokenFormat::kNanogpt:
      return "nanogpt";
    case TokenFormat::kLlmc:
      return "llmc";
  }
  return "?";
}

DataMode parse_data_mode(const std::string& s, const std::string& key) {
  if (s == "preload") return DataMode::kPreload;
  if (s == "mmap") return DataMode::kMmap;
  fail(
      "{} = '{}': expected 'auto' (preload small files, map large ones), 'preload' (read the "
      "files into RAM) or 'mmap' (map them read-only)",
      key, s);
}

uint16_t max_token_id(const uint16_t* data, int64_t n) {
  uint16_t m = 0;
#pragma omp parallel for simd reduction(max : m) schedule(static)
  for (int64_t i = 0; i < n; ++i) m = std::max(m, data[i]);
  return m;
}

int64_t find_first_token_at_least(const uint16_t* data, int64_t n, int limit) {
  // Scan in chunks: a branch-free max per chunk, then the exact index inside the first bad chunk.
  constexpr int64_t kChunk = 4096;
  for (int64_t begin = 0; begin < n; begin += kChunk) {
    int64_t end = std::min(n, begin + kChunk);
    uint16_t m = 0;
#pragma omp simd reduction(max : m)
    for (int64_t i = begin; i < end; ++i) m = std::max(m, data[i]);
    if (m >= limit) {
      for (int64_t i = begin; i < end; ++i) {
        if (data[i] >= limit) return i;
      }
    }
  }
  return -1;
}

namespace {

// Reads exactly `bytes` at `offset` (pread loop); throws naming `path` on error or short read.
void read_exact(int fd, const std::string& path, void* dst, size_t bytes, int64_t offset) {
  auto* out = static_cast<uint8_t*>(dst);
  size_t done = 0;
  while (done < bytes) {
    ssize_t r = ::pread(fd, out + done, bytes - done, static_cast<off_t>(offset + done));
    if (r < 0 && errno == EINTR) continue;
    CHECK(r > 0, "reading '{}' failed at byte {} of {}: {}", path, offset + done, offset + bytes,
          r < 0 ? std::strerror(errno) : "unexpected end of file");
    done += static_cast<size_t>(r);
  }
}

class Fd {
 public:
  explicit Fd(const std::string& path) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    CHECK(fd_ >= 0, "cannot open token file '{}': {}", path, std::strerror(errno));
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { ::close(fd_); }
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

TokenFile::TokenFile(const std::string& path, const TokenFileOptions& options)
    : path_(path), mode_(options.mode) {
  struct stat st {};
  CHECK(::stat(path.c_str(), &st) == 0,
        "token file '{}' not found ({}); create it with `nanogpt prepare` or fix data_dir", path,
        std::strerror(errno));
  CHECK(S_ISREG(st.st_mode), "token file '{}' is not a regular file", path);
  const int64_t file_bytes = static_cast<int64_t>(st.st_size);
  CHECK(file_bytes > 0, "token file '{}' is empty (0 bytes); re-run `nanogpt prepare`", path);

  Fd fd(path);
  int32_t first = 0;
  if (file_bytes >= 4) read_exact(fd.get(), path, &first, 4, 0);

  format_ = options.format;
  if (format_ == TokenFormat::kAuto) {
    CHECK(first != kLlmcModelMagic,
          "'{}' is an llm.c model file (magic {}), not a token file; pass it as a checkpoint", path,
          first);
    CHECK(first != kLlmcTokenizerMagic,
          "'{}' is an llm.c tokenizer file (magic {}), not a token file", path, first);
    format_ = first == kLlmcShardMagic ? TokenFormat::kLlmc : TokenFormat::kNanogpt;
  }

  if (format_ == TokenFormat::kLlmc) {
    CHECK(file_bytes >= kLlmcHeaderBytes,
          "llm.c shard '{}' is {} bytes, shorter than its {}-byte header; the file is truncated",
          path, file_bytes, kLlmcHeaderBytes);
    std::array<int32_t, kLlmcHeaderInts> header{};
    read_exact(fd.get(), path, header.data(), kLlmcHeaderBytes, 0);
    CHECK(header[0] == kLlmcShardMagic,
          "'{}': bad magic {} in the llm.c shard header (expected {}); it is not an llm.c token "
          "shard -- for a headerless nanoGPT .bin use format 'nanogpt'",
          path, header[0], kLlmcShardMagic);
    CHECK(header[1] == kLlmcShardVersion,
          "llm.c shard '{}': version {} not supported (expected {} = uint16 tokens); re-create "
          "it with `nanogpt prepare format=llmc`",
          path, header[1], kLlmcShardVersion);
    const int64_t count = header[2];
    const int64_t expected = kLlmcHeaderBytes + 2 * count;
    CHECK(count >= 0 && file_bytes == expected,
          "llm.c shard '{}': size {} bytes does not match its header's token count {} (expected "
          "1024 + 2 * {} = {} bytes); the file is truncated or was written incompletely",
          path, file_bytes, count, count, expected);
    data_offset_ = kLlmcHeaderBytes;
    size_ = count;
  } else {
    CHECK(file_bytes % 2 == 0,
          "token file '{}' has an odd byte count ({}); nanoGPT .bin files hold uint16 tokens (2 "
          "bytes each), so it is truncated or not a token file",
          path, file_bytes);
    data_offset_ = 0;
    size_ = file_bytes / 2;
  }
  CHECK(size_ >= options.min_tokens,
        "token file '{}' has {} tokens, fewer than the {} needed (block_size + 1 for one "
        "sequence); use a smaller block_size or a larger dataset",
        path, size_, options.min_tokens);

  if (mode_ == DataMode::kPreload) {
    buffer_ = Buffer<uint16_t>(static_cast<size_t>(size_));
    if (size_ > 0) read_exact(fd.get(), path, buffer_.data(), size_ * 2, data_offset_);
    tokens_ = buffer_.data();
  } else {
    map_ = MappedFile(path);
    CHECK(static_cast<int64_t>(map_.size()) == file_bytes,
          "token file '{}' changed size while being opened ({} -> {} bytes)", path, file_bytes,
          map_.size());
    map_.advise(options.access);
    tokens_ = reinterpret_cast<const uint16_t*>(map_.data() + data_offset_);
  }

  if (options.vocab_size > 0) {
    uint16_t m = max_token();
    if (m >= options.vocab_size) {
      int64_t at = find_first_token_at_least(tokens_, size_, options.vocab_size);
      fail(
          "token file '{}': token id {} at token offset {} (byte {}) is >= vocab_size {}; the "
          "file was made with a different tokenizer -- re-run `nanogpt prepare` or fix "
          "vocab_size (largest id in the file: {})",
          path, tokens_[at], at, data_offset_ + 2 * at, options.vocab_size, m);
    }
  }
}

uint16_t TokenFile::max_token() const {
  if (mode_ != DataMode::kMmap) return max_token_id(tokens_, size_);
  // Mapped: by chunks, each dropped from RSS once scanned (a 10 GB file would otherwise stay
  // resident after the scan).
  constexpr int64_t kChunk = int64_t{64} << 20;  // tokens (128 MiB)
  uint16_t m = 0;
  for (int64_t begin = 0; begin < size_; begin += kChunk) {
    const int64_t n = std::min(kChunk, size_ - begin);
    m = std::max(m, max_token_id(tokens_ + begin, n));
    map_.release(static_cast<size_t>(data_offset_ + 2 * begin), static_cast<size_t>(2 * n));
  }
  return m;
}

void TokenFile::release_pages() const {
  if (mode_ == DataMode::kMmap) map_.release(0, map_.size());
}

void TokenFile::prefetch(int64_t begin, int64_t count) const {
  if (mode_ != DataMode::kMmap) return;
  map_.prefetch(static_cast<size_t>(data_offset_ + 2 * begin), static_cast<size_t>(2 * count));
}

}  // namespace nanogpt
