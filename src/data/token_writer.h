// Writers for token files: nanoGPT's headerless uint16 .bin and llm.c's headered shard.
// Both write to '<path>.tmp' and rename, so a reader never sees a half-written file.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "data/token_file.h"

namespace nanogpt {

// Headerless little-endian uint16 tokens (nanoGPT train.bin / val.bin).
void write_nanogpt_tokens(const std::string& path, std::span<const uint16_t> tokens);
// llm.c shard: 256 x int32 header {20240520, 1, count, 0...} then the uint16 tokens.
void write_llmc_shard(const std::string& path, std::span<const uint16_t> tokens);
// Dispatches on format (kNanogpt or kLlmc; kAuto is an error).
void write_token_file(const std::string& path, std::span<const uint16_t> tokens,
                      TokenFormat format);

}  // namespace nanogpt
