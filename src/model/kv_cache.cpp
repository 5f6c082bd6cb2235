// KvCache allocation: one arena holding K, V of every layer and the one-token scratch.
#include "model/kv_cache.h"

#include "core/check.h"

namespace nanogpt {

KvCache::KvCache(const ModelConfig& config, int max_T, MemoryTracker* tracker, MemorySpace* space)
    : max_T_(max_T), C_(config.n_embd) {
  CHECK(max_T >= 1 && max_T <= config.block_size,
        "KV cache length {} must be in 1..block_size ({}); ask for at most block_size tokens",
        max_T, config.block_size);
  const int64_t C = C_;
  const int64_t kv = 2 * static_cast<int64_t>(config.n_layer) * max_T * C;
  const int64_t skips = config.unet_skips ? static_cast<int64_t>(config.n_layer / 2) * C : 0;
  const int64_t scratch =
      16 * C + 32 + skips;  // x, x2, ln, qkv, atty, proj (8C) + fch, gelu (8C) + mean/rstd
  arena_ = Buffer<float>(static_cast<size_t>(kv + scratch), tracker, space);
  float* p = arena_.data();
  kv_ = p;
  p += kv;
  x = p, p += C;
  x2 = p, p += C;
  ln = p, p += C;
  qkv = p, p += 3 * C;
  atty = p, p += C;
  proj = p, p += C;
  fch = p, p += 4 * C;
  fch_gelu = p, p += 4 * C;
  mean = p, p += 16;
  rstd = p, p += 16;
  if (skips > 0) this->skips = p;
}

void KvCache::set_length(int length) {
  CHECK(length >= 0 && length <= max_T_, "KV cache length {} out of range 0..{}", length, max_T_);
  length_ = length;
}

}  // namespace nanogpt
