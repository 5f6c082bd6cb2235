// ModelConfig validation.
#include "model/model_config.h"

#include "core/check.h"

namespace nanogpt {

void ModelConfig::validate() const {
  CHECK(n_layer >= 1, "n_layer = {}: expected >= 1", n_layer);
  CHECK(n_head >= 1, "n_head = {}: expected >= 1", n_head);
  CHECK(n_embd >= 1 && n_embd % n_head == 0,
        "n_embd = {} must be a positive multiple of n_head = {} (e.g. n_embd = {})", n_embd, n_head,
        (n_embd / n_head + 1) * n_head);
  CHECK(block_size >= 1, "block_size = {}: expected >= 1", block_size);
  CHECK(vocab_size >= 1 && vocab_size <= 65536,
        "vocab_size = {}: expected 1..65536 (token files hold uint16 ids)", vocab_size);
  CHECK(dropout >= 0.0 && dropout < 1.0, "dropout = {}: expected 0 <= dropout < 1", dropout);
  CHECK(gelu == "tanh" || gelu == "exact", "gelu = '{}': expected 'tanh' or 'exact'", gelu);
}

}  // namespace nanogpt
