// PrepareConfig validation.
#include "data/prepare_config.h"

#include <cstdint>
#include <limits>

#include "core/byte_size.h"
#include "core/check.h"

namespace nanogpt {

void PrepareConfig::validate() const {
  CHECK(tokenizer == "char" || tokenizer == "gpt2", "tokenizer = '{}': expected 'char' or 'gpt2'",
        tokenizer);
  CHECK(!input.empty(),
        "input is empty: give text files, .jsonl files or directories, e.g. "
        "--input=data/tinyshakespeare.txt");
  CHECK(!out_dir.empty(), "out_dir is empty: say where to write train.bin, val.bin, meta.json");
  CHECK(val_fraction >= 0.0 && val_fraction < 1.0,
        "val_fraction = {}: expected 0 <= val_fraction < 1 (e.g. 0.1)", val_fraction);
  CHECK(format == "nanogpt" || format == "llmc",
        "format = '{}': expected 'nanogpt' (raw uint16 .bin) or 'llmc' (llm.c shard)", format);
  CHECK(threads >= 0, "threads = {}: expected >= 0 (0 = all cores)", threads);
  CHECK(parse_byte_size(memory_budget, "memory_budget") > 0,
        "memory_budget = '{}': expected a positive size such as 1G", memory_budget);
  CHECK(shard_tokens >= 0 && shard_tokens <= std::numeric_limits<int32_t>::max(),
        "shard_tokens = {}: expected 0 (one file per split) or 1 .. 2147483647 (the most an llm.c "
        "header counts)",
        shard_tokens);
  CHECK(shard_tokens == 0 || format == "llmc",
        "shard_tokens = {} applies to format='llmc' only: nanoGPT's train.bin and val.bin are "
        "single files; drop shard_tokens or add --format=llmc",
        shard_tokens);
}

}  // namespace nanogpt
