// The sequence-length warmup (context_warmup_iters) under mpirun: each rank cuts its own
// micro-batches into the short sequences, so 2 ranks equal 1 rank, plainly and with ZeRO-1.
#include <gtest/gtest.h>

#include "mpi_util.h"

namespace nanogpt::mpi_test {
namespace {

TEST(ContextWarmupDataParallel, TwoRanksEqualOneRankPlainAndZeroOne) {
  // (the out_dir the helper appends comes after tiny_keys' own, and wins)
  expect_one_two_and_zero_one_ranks_agree(
      prepared_dir("context_warmup"),
      tiny_keys("unused") + " --context_warmup_iters=6 --context_warmup_start=8 --max_iters=8",
      "warmup");
}

}  // namespace
}  // namespace nanogpt::mpi_test
