// LoaderConfig validation.
#include "data/loader_config.h"

#include "core/check.h"
#include "data/token_file.h"

namespace nanogpt {

void LoaderConfig::validate() const {
  if (data_mode != "auto") parse_data_mode(data_mode);
  CHECK(sampling == "random" || sampling == "sequential",
        "sampling = '{}': expected 'random' (nanoGPT) or 'sequential' (llm.c)", sampling);
  CHECK(batch_size >= 1, "batch_size = {}: expected >= 1", batch_size);
  CHECK(block_size >= 1, "block_size = {}: expected >= 1", block_size);
  CHECK(world_size >= 1, "world_size = {}: expected >= 1", world_size);
  CHECK(rank >= 0 && rank < world_size, "rank = {}: expected 0 <= rank < world_size = {}", rank,
        world_size);
  parse_token_format(format);
  CHECK(vocab_size >= 0 && vocab_size <= 65536,
        "vocab_size = {}: expected 0 (no check) or 1..65536 (token files hold uint16 ids)",
        vocab_size);
}

}  // namespace nanogpt
