// plan_prepare: the budget's split between word caches, whole-document reads, scratch and blocks.
#include "data/prepare_plan.h"

#include <algorithm>

#include "core/byte_size.h"
#include "core/check.h"
#include "tokenizer/word_cache.h"

namespace nanogpt {

namespace {

constexpr size_t kMiB = size_t{1} << 20;
// Fixed costs inside the budget: gzip buffers, the char pass's code point sets, small vectors.
constexpr size_t kFixedBytes = 2 * kMiB;
// Larger blocks and word caches than these were no faster (measured on 2 threads with the bench
// corpus: a cache of 32 MiB holds 512K words; a bigger hash table misses the CPU caches more).
constexpr size_t kMaxBlockBytes = 8 * kMiB;
constexpr size_t kMaxWordCacheBytes = 32 * kMiB;

// Per block in flight: its text (block_bytes) and its tokens (uint16, at most one per byte plus one
// per document); the reader's read-ahead: a block and a quarter.
constexpr double kBlocksPerSlot = 3.0;
constexpr double kReadAheadBlocks = 1.25;

PreparePlan make_plan(int64_t budget, int threads, bool gpt2) {
  PreparePlan p;
  p.budget = budget;
  p.threads = threads;
  p.slots = 2 * threads + 2;
  const auto b = static_cast<size_t>(budget);
  if (gpt2) {
    p.word_cache_bytes = std::clamp(b / (8 * static_cast<size_t>(threads)), WordCache::kMinMaxBytes,
                                    kMaxWordCacheBytes);
  }
  // A JSONL line is held raw (its buffer may double while it grows), parsed and as the document's
  // text: 4x.
  p.max_whole_bytes = std::max(kMiB, b / 16);
  p.copy_buffer_bytes = std::clamp(b / 4, kMiB, 64 * kMiB);
  const int64_t fixed = static_cast<int64_t>(threads) *
                            static_cast<int64_t>(p.word_cache_bytes + kWorkerScratchBytes) +
                        4 * static_cast<int64_t>(p.max_whole_bytes) + kFixedBytes;
  const double rest = static_cast<double>(budget - fixed);
  p.block_bytes =
      rest > 0 ? std::min(kMaxBlockBytes,
                          static_cast<size_t>(rest / (kBlocksPerSlot * p.slots + kReadAheadBlocks)))
               : 0;
  return p;
}

}  // namespace

int64_t PreparePlan::planned_bytes() const {
  const double blocks =
      (kBlocksPerSlot * slots + kReadAheadBlocks) * static_cast<double>(block_bytes);
  const auto pipeline =
      static_cast<int64_t>(blocks) +
      static_cast<int64_t>(threads) * static_cast<int64_t>(word_cache_bytes + kWorkerScratchBytes) +
      4 * static_cast<int64_t>(max_whole_bytes) + static_cast<int64_t>(kFixedBytes);
  // The copy buffer is used after the pipeline has ended.
  return std::max(pipeline, static_cast<int64_t>(copy_buffer_bytes));
}

std::string PreparePlan::describe() const {
  std::string s =
      fmt::format("memory budget {}: {} blocks of {} in flight", format_byte_size(budget), slots,
                  format_byte_size(static_cast<int64_t>(block_bytes)));
  if (word_cache_bytes > 0) {
    s += fmt::format(", word caches {} x {}", threads,
                     format_byte_size(static_cast<int64_t>(word_cache_bytes)));
  }
  s += fmt::format(", JSONL lines up to {}",
                   format_byte_size(static_cast<int64_t>(max_whole_bytes)));
  return s;
}

PreparePlan plan_prepare(int64_t budget, int threads, bool gpt2) {
  CHECK(threads >= 1, "plan_prepare: threads {} must be >= 1", threads);
  PreparePlan p = make_plan(budget, threads, gpt2);
  if (p.block_bytes < kMinBlockBytes) {
    int64_t least = budget;
    while (make_plan(least, threads, gpt2).block_bytes < kMinBlockBytes) least += int64_t{1} << 20;
    fail(
        "memory_budget = {} is too small for {} thread(s): prepare needs at least {} (about {} "
        "MiB) for its blocks, buffers{}; raise --memory_budget or lower --threads",
        format_byte_size(budget), threads, format_byte_size(least), (least + kMiB - 1) / kMiB,
        gpt2 ? " and GPT-2 word caches" : "");
  }
  return p;
}

}  // namespace nanogpt
