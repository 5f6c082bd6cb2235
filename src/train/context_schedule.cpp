// The sequence-length warmup's contexts per iteration (context_schedule.h).
#include "train/context_schedule.h"

#include <fmt/format.h>

#include "core/check.h"

namespace nanogpt {
namespace {

// Doublings from `start` to `block` (block / start = 2^k), or -1 when that is no power of two.
int doublings(int start, int block) {
  if (start < 1 || block % start != 0) return -1;
  int ratio = block / start, k = 0;
  while (ratio > 1) {
    if (ratio % 2 != 0) return -1;
    ratio /= 2, ++k;
  }
  return k;
}

}  // namespace

void ContextSchedule::validate() const {
  CHECK(warmup_iters >= 0,
        "context_warmup_iters = {}: expected >= 0 iterations (0 turns the sequence-length warmup "
        "off)",
        warmup_iters);
  if (warmup_iters == 0) return;
  CHECK(start >= 1 && start <= block_size,
        "context_warmup_start = {}: expected a context between 1 and block_size ({}), e.g. "
        "--context_warmup_start={}",
        start, block_size, block_size >= 4 ? block_size / 4 : 1);
  CHECK(doublings(start, block_size) >= 0,
        "context_warmup_start = {} with block_size = {}: the context doubles up to block_size, "
        "so block_size / context_warmup_start must be a power of two (e.g. "
        "--context_warmup_start={})",
        start, block_size, block_size >= 4 ? block_size / 4 : 1);
}

int ContextSchedule::context_at(int64_t iter) const {
  if (warmup_iters <= 0 || iter >= warmup_iters) return block_size;
  const int k = doublings(start, block_size);
  if (k <= 0) return block_size;
  // stage s covers [s * warmup / k, (s + 1) * warmup / k)
  const int64_t stage = iter * k / warmup_iters;
  return start << stage;
}

std::string ContextSchedule::describe() const {
  const int k = doublings(start, block_size);
  if (warmup_iters <= 0 || k <= 0) return "";
  std::string stages;
  for (int s = 0; s < k; ++s) {
    // the first iteration of stage s + 1: the smallest i with i * k / warmup >= s + 1
    const int64_t until = ((s + 1) * warmup_iters + k - 1) / k;
    stages += fmt::format("{}{} until {}", s ? ", " : "", start << s, until);
  }
  return fmt::format("context {} -> {} by doubling over the first {} iterations ({})", start,
                     block_size, warmup_iters, stages);
}

}  // namespace nanogpt
