// run_block_pipeline: prepare's ordered parallel loop. The calling thread reads blocks
// (BlockReader) into a ring of `slots`, `threads` worker threads encode them in any order, and the
// calling thread hands each result to `consume` in reading order, so the output never depends on
// the thread count and at most `slots` blocks (text and tokens) are in memory at once.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "data/block_reader.h"

namespace nanogpt {

// work(worker, block, tokens): appends the block's tokens (tokens arrives empty); runs on worker
// thread `worker` (0 .. threads-1), so per-thread state can be indexed by it. May throw.
using BlockWork =
    std::function<void(int worker, const Block& block, std::vector<uint16_t>& tokens)>;
// consume(block, tokens): on the calling thread, in block order. May throw.
using BlockConsume = std::function<void(const Block& block, std::span<const uint16_t> tokens)>;

// Runs until the reader is exhausted. The first exception (from reading, a worker or consume, in
// block order) stops the workers and is rethrown.
void run_block_pipeline(BlockReader& reader, int threads, int slots, const BlockWork& work,
                        const BlockConsume& consume);

}  // namespace nanogpt
