// Stopping a data-parallel run on request: SIGUSR1 to mpirun (which forwards it to every rank)
// stops every rank at the same step, rank 0 writes the checkpoint (ZeRO-1: the gathered shards,
// also where rank 0 saved at that iteration already),
// the job exits with status 75, and resuming under mpirun gives an uninterrupted run's records.
#include <gtest/gtest.h>

#include "mpi_util.h"

namespace nanogpt::mpi_test {
namespace {

TEST(DataParallelStop, Sigusr1StopsEveryRankAtOneStepAndTheRunResumesBitExactly) {
  std::string dir = prepared_dir("stop");
  for (const std::string zero : {"0", "1"}) {
    SCOPED_TRACE("zero_stage " + zero);
    // ZeRO-1 evaluates (and rank 0 saves) at every step: the stop then lands on an iteration rank
    // 0 has just saved, and every rank must still take part in the gather.
    const std::string keys = " --zero_stage=" + zero + " --lr_decay_iters=40" +
                             (zero == "1" ? " --eval_interval=1" : "");
    RunResult straight =
        run_ranks(dir, 2, "train " + tiny_keys("straight_" + zero) + keys + " --max_iters=24");
    ASSERT_EQ(straight.exit_code, 0) << straight.output;
    const std::string out = "stopped_" + zero;
    RunResult r = e2e::run_and_signal(dir,
                                      "OMP_NUM_THREADS=1 " + mpirun(2) + " " + binary() +
                                          " train " + tiny_keys(out) + keys + " --max_iters=100000",
                                      out + "/metrics.jsonl", "USR1", 9);
    ASSERT_EQ(r.exit_code, 75) << r.output;
    EXPECT_NE(r.output.find("stopped by SIGUSR1 before iteration "), std::string::npos) << r.output;
    RunResult resumed =
        run_ranks(dir, 2, "train " + tiny_keys(out) + keys + " --init_from=resume --max_iters=24");
    ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
    EXPECT_EQ(e2e::timing_free_records(dir + "/" + out + "/metrics.jsonl"),
              e2e::timing_free_records(dir + "/straight_" + zero + "/metrics.jsonl"));
  }
}

}  // namespace
}  // namespace nanogpt::mpi_test
