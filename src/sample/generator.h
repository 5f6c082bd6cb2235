// Autoregressive generation from a GPT: with a KV cache (each new token costs O(T): one
// forward_one) or without (a full forward over the last block_size tokens per new token, as
// nanoGPT's generate does). When the context fills, the cached path re-reads the last half
// block into a fresh cache and continues.
#pragma once

#include <functional>
#include <vector>

#include "core/rng.h"
#include "kernels/backend.h"
#include "model/gpt.h"
#include "sample/token_sampler.h"

namespace nanogpt {

struct GenerateOptions {
  int max_new_tokens = 100;
  bool use_kv_cache = true;
  int stop_token = -1;  // >= 0: stop after generating it
};

// What cached generation needs of a model: one token at a time into its KV cache. generate()
// below steps GPT::forward_one into a KvCache in the model's memory, on whatever backend holds it.
class TokenStepper {
 public:
  virtual ~TokenStepper() = default;
  virtual const ModelConfig& config() const = 0;
  virtual void clear() = 0;        // empties the cache
  virtual int length() const = 0;  // tokens in the cache
  // Runs `token` at position pos (== length() < block_size) and writes the next token's logits
  // (padded_vocab_size() floats; the first vocab_size meaningful).
  virtual void step(int token, int pos, float* logits_out) = 0;
};

// Cached generation on any stepper (prompt + generated ids, as generate()).
std::vector<int> generate_cached(TokenStepper& model, const std::vector<int>& prompt,
                                 TokenSampler& sampler, Rng& rng, const GenerateOptions& options,
                                 const std::function<void(int)>& on_token = {});

// Returns prompt + generated ids. on_token (may be empty) is called with each new id as it comes.
// ops: the backend whose memory holds the model (the GPT's `memory`; a CpuBackend for a model in
// host memory); the KV cache is made in the same memory.
std::vector<int> generate(GPT& model, Backend& ops, const std::vector<int>& prompt,
                          TokenSampler& sampler, Rng& rng, const GenerateOptions& options,
                          const std::function<void(int)>& on_token = {});

}  // namespace nanogpt
