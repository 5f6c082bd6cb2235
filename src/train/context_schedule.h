// The sequence-length warmup (modded-nanogpt's short contexts early in training): the context the
// model trains on at an iteration. The batch the loader reads is always (B, block_size); at a
// shorter context T' each of its rows is cut into block_size / T' consecutive sequences, so the
// step takes (B * block_size / T', T') tokens: the same tokens, the same loader stream (resume and
// data parallelism unchanged), attention over shorter windows. The context doubles from
// context_warmup_start at equal shares of context_warmup_iters and is block_size from then on:
// with start 64, block 256 and 200 iterations, 64 for [0, 100), 128 for [100, 200), 256 after.
#pragma once

#include <cstdint>
#include <string>

namespace nanogpt {

struct ContextSchedule {
  int block_size = 0;
  int64_t warmup_iters = 0;  // 0: block_size at every iteration
  int start = 0;             // the first context (block_size / start a power of two)

  // Throws nanogpt::Error naming context_warmup_start / context_warmup_iters and what to change.
  void validate() const;
  // The context at iteration `iter` (>= 0): a divisor of block_size.
  int context_at(int64_t iter) const;
  // "context 64 -> 256 by doubling over the first 200 iterations (64 until 100, 128 until 200)",
  // or "" when off: the log line of the run's data.
  std::string describe() const;
};

}  // namespace nanogpt
