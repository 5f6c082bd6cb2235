// Token file writers: header (llm.c), payload, atomic rename.
#include "data/token_writer.h"

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>

#include "core/check.h"

namespace nanogpt {

namespace {

// Writes header bytes (may be empty) then the tokens to path.tmp, then renames to path.
void write_atomic(const std::string& path, std::span<const uint8_t> header,
                  std::span<const uint16_t> tokens) {
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  CHECK(f != nullptr, "cannot create '{}': {} (does the directory exist and is it writable?)", tmp,
        std::strerror(errno));
  // (fwrite must not get a null pointer, even for 0 bytes: nanoGPT files have no header.)
  bool ok = header.empty() || std::fwrite(header.data(), 1, header.size(), f) == header.size();
  ok = ok && (tokens.empty() || std::fwrite(tokens.data(), 2, tokens.size(), f) == tokens.size());
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) {
    std::remove(tmp.c_str());
    fail("writing '{}' failed ({} tokens): {}; is the disk full?", path, tokens.size(),
         std::strerror(errno));
  }
  CHECK(std::rename(tmp.c_str(), path.c_str()) == 0, "cannot rename '{}' to '{}': {}", tmp, path,
        std::strerror(errno));
}

}  // namespace

void write_nanogpt_tokens(const std::string& path, std::span<const uint16_t> tokens) {
  write_atomic(path, {}, tokens);
}

void write_llmc_shard(const std::string& path, std::span<const uint16_t> tokens) {
  CHECK(tokens.size() <= static_cast<size_t>(std::numeric_limits<int32_t>::max()),
        "llm.c shard '{}': {} tokens do not fit the int32 count of its header (max {}); split "
        "the data into several shards",
        path, tokens.size(), std::numeric_limits<int32_t>::max());
  std::array<int32_t, kLlmcHeaderInts> header{};
  header[0] = kLlmcShardMagic;
  header[1] = kLlmcShardVersion;
  header[2] = static_cast<int32_t>(tokens.size());
  static_assert(sizeof(header) == kLlmcHeaderBytes);
  write_atomic(path, {reinterpret_cast<const uint8_t*>(header.data()), sizeof(header)}, tokens);
}

void write_token_file(const std::string& path, std::span<const uint16_t> tokens,
                      TokenFormat format) {
  CHECK(format != TokenFormat::kAuto, "write_token_file('{}'): format must be nanogpt or llmc",
        path);
  if (format == TokenFormat::kLlmc) {
    write_llmc_shard(path, tokens);
  } else {
    write_nanogpt_tokens(path, tokens);
  }
}

}  // namespace nanogpt
