// PreparePlan: how prepare divides its memory budget (--memory_budget) so that its peak memory is
// bounded by it whatever the corpus size. The budget covers the blocks in flight (each: its text
// and its tokens), the reader's read-ahead, the longest document read whole (a JSONL line), the
// GPT-2 word caches, the encoders' scratch and the copy buffer of the final split. Outside it: the
// tokenizer's own tables (GPT-2 vocabulary and merges), the binary, libraries and thread stacks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace nanogpt {

struct PreparePlan {
  int64_t budget = 0;
  int threads = 1;
  int slots = 4;                // blocks in flight (2 per thread + 2: the reader and the writer)
  size_t block_bytes = 0;       // text per block
  size_t word_cache_bytes = 0;  // per thread (gpt2)
  size_t max_whole_bytes = 0;   // longest JSONL line / strip_pos_tags file
  size_t copy_buffer_bytes = 0;

  // Bytes the plan may hold at its peak (<= budget).
  int64_t planned_bytes() const;
  // One line for the summary, e.g. "memory budget 1.0 GiB: 6 blocks of 29.1 MiB, ...".
  std::string describe() const;
};

// Per-worker scratch of the encoders: token ids of one slice of text (kEncodeSliceBytes) as int32.
inline constexpr size_t kEncodeSliceBytes = size_t{256} << 10;
inline constexpr size_t kWorkerScratchBytes = 4 * kEncodeSliceBytes + (size_t{256} << 10);
inline constexpr size_t kMinBlockBytes = size_t{64} << 10;

// Throws nanogpt::Error if budget is too small for `threads` threads, naming the least that works.
PreparePlan plan_prepare(int64_t budget, int threads, bool gpt2);

}  // namespace nanogpt
