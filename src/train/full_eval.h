// The loss on a whole token split (time to target's full-validation evaluation): every token
// but each file's first is the target of exactly one position, the model in eval mode (no
// dropout), the mean taken over all those targets. Windows are sharded over the ranks of a
// data-parallel run and their sums all-reduced, so every rank gets the same mean.
#pragma once

#include <cstdint>
#include <vector>

#include "distributed/communicator.h"
#include "kernels/cpu_backend.h"
#include "model/gpt.h"

namespace nanogpt {

// One token file's tokens (uint16 ids, as TokenFile holds them).
struct TokenSpan {
  const uint16_t* tokens = nullptr;
  int64_t size = 0;
};

struct FullEvalResult {
  double mean_loss = 0;       // mean cross-entropy over every target token
  int64_t target_tokens = 0;  // how many targets that mean is over (sum of size - 1 per file)
};

// The windows of one file of n tokens: inputs [k*T, k*T + T), targets one further, for every k
// with k*T + T + 1 <= n (non-overlapping full windows), then, where tokens are left over, one last
// shorter window of the remaining r = (n - 1) - k*T targets. Full windows go through the model
// batch_size at a time (the last batch smaller); each short tail window alone. Batch b (counted
// over all files in order, tails included) is computed by rank b % comm.size(); the ranks
// all-reduce the sum of loss x targets and the count. Every rank must call it (a collective).
FullEvalResult full_split_loss(GPT& model, Backend& ctx, const std::vector<TokenSpan>& files,
                               int block_size, int batch_size, Communicator& comm);

}  // namespace nanogpt
