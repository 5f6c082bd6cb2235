// The sequence-length warmup (context_warmup_iters) under mpirun: each rank cuts its own
// micro-batches into the short sequences, so 2 ranks equal 1 rank, plainly and with ZeRO-1. And
// the U-net skips (unet_skips): their weights' gradients reach the all-reduce whole.
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

TEST(UnetSkipsDataParallel, TwoRanksEqualOneRankPlainAndZeroOne) {
  expect_one_two_and_zero_one_ranks_agree(
      prepared_dir("unet_skips"),
      tiny_keys("unused") + " --n_layer=3 --unet_skips=True --max_iters=8", "unet");
}

}  // namespace
}  // namespace nanogpt::mpi_test
