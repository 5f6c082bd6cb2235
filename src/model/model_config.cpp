// ModelConfig validation.
#include "model/model_config.h"

#include <cmath>

#include "core/check.h"

namespace nanogpt {

int64_t ModelConfig::num_params_bound() const {
  const int64_t L = n_layer, C = n_embd, T = block_size, Vp = padded_vocab_size();
  return (2 * Vp + T) * C + L * (12 * C * C + 13 * C) + 2 * C;  // with an untied head
}

void ModelConfig::validate() const {
  CHECK(n_layer >= 1 && n_layer <= kMaxLayers, "n_layer = {}: expected 1..{}", n_layer, kMaxLayers);
  CHECK(n_head >= 1, "n_head = {}: expected >= 1", n_head);
  CHECK(n_embd >= 1 && n_embd <= kMaxEmbd, "n_embd = {}: expected 1..{}", n_embd, kMaxEmbd);
  CHECK(n_embd % n_head == 0,
        "n_embd = {} must be a positive multiple of n_head = {} (e.g. n_embd = {})", n_embd, n_head,
        (n_embd / n_head + 1) * n_head);
  CHECK(block_size >= 1 && block_size <= kMaxBlockSize, "block_size = {}: expected 1..{}",
        block_size, kMaxBlockSize);
  CHECK(vocab_size >= 1 && vocab_size <= kMaxVocab,
        "vocab_size = {}: expected 1..{} (token files hold uint16 ids)", vocab_size, kMaxVocab);
  CHECK(num_params_bound() <= kMaxParams,
        "n_layer = {}, n_embd = {}, block_size = {}, vocab_size = {} make {} parameters, more than "
        "the {} allowed",
        n_layer, n_embd, block_size, vocab_size, num_params_bound(), kMaxParams);
  CHECK(dropout >= 0.0 && dropout < 1.0, "dropout = {}: expected 0 <= dropout < 1", dropout);
  CHECK(attn_dropout == -1.0 || (attn_dropout >= 0.0 && attn_dropout < 1.0),
        "attn_dropout = {}: expected 0 <= attn_dropout < 1, or -1 for dropout's value",
        attn_dropout);
  CHECK(gelu == "tanh" || gelu == "exact", "gelu = '{}': expected 'tanh' or 'exact'", gelu);
  CHECK(norm == "layernorm" || norm == "rmsnorm", "norm = '{}': expected 'layernorm' or 'rmsnorm'",
        norm);
  CHECK(position == "learned" || position == "rotary",
        "position = '{}': expected 'learned' or 'rotary'", position);
  CHECK(position != "rotary" || head_size() % 2 == 0,
        "position = 'rotary' needs an even head size; n_embd {} / n_head {} = {} (choose n_embd "
        "and n_head so that n_embd / n_head is even)",
        n_embd, n_head, head_size());
  CHECK(rope_theta > 1.0, "rope_theta = {}: expected > 1 (e.g. 10000)", rope_theta);
  CHECK(activation == "gelu" || activation == "relu2",
        "activation = '{}': expected 'gelu' or 'relu2'", activation);
  CHECK(!unet_skips || n_layer >= 2,
        "unet_skips = True needs n_layer >= 2 (the first n_layer / 2 blocks feed the last); got "
        "n_layer = {}",
        n_layer);
  CHECK(qk_norm_gain > 0.0 && std::isfinite(qk_norm_gain),
        "qk_norm_gain = {}: expected a gain > 0 (1 = off; e.g. 2)", qk_norm_gain);
  CHECK(qk_norm || qk_norm_gain == 1.0,
        "qk_norm_gain = {} needs qk_norm = True (it scales QK-norm's normalized queries): set "
        "--qk_norm=True, or leave qk_norm_gain at 1",
        qk_norm_gain);
  CHECK(logit_softcap >= 0.0, "logit_softcap = {}: expected >= 0 (0 = off; e.g. 15 or 30)",
        logit_softcap);
  CHECK(attn_gain >= 0.0 && std::isfinite(attn_gain),
        "attn_gain = {}: expected >= 0, the learned attention gains' starting value (0 = off; "
        "e.g. 0.5)",
        attn_gain);
}

}  // namespace nanogpt
