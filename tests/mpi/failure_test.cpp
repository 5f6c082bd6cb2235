// Failures of a data-parallel job end every rank within a bounded time with a message naming the
// rank, and leave the last checkpoint loadable: a rank killed with SIGKILL (the launcher notices),
// and a rank that stops answering (its peers' comm_timeout expires: what a cut network looks like).
#include <gtest/gtest.h>

#include <fstream>

#include "mpi_util.h"

namespace nanogpt::mpi_test {
namespace {

// Starts a 2-rank job that would run for hours, waits until it has saved a checkpoint, sends
// `signal` to rank 1, and returns what the job printed followed by "mpirun exit N". A job still
// running 120 s later is killed (exit 124 then means: it hung).
RunResult break_rank_one(const std::string& dir, const std::string& signal,
                         const std::string& extra_keys) {
  const std::string keys = "--dataset=sc --batch_size=2 --gradient_accumulation_steps=4 "
                           "--block_size=32 --n_layer=2 --n_head=2 --n_embd=32 --eval_interval=5 "
                           "--eval_iters=1 --log_interval=1000 --max_iters=1000000 --out_dir=run " +
                           extra_keys;
  const std::string script =
      "rm -f pid.*; (OMP_NUM_THREADS=1 timeout --kill-after=5 120 " + mpirun(2) +
      " sh -c 'echo $$ > pid.$OMPI_COMM_WORLD_RANK; exec " + std::string(NANOGPT_BINARY) +
      " train " + keys + "' > job.log 2>&1; echo \"mpirun exit $?\" >> job.log) & job=$!; " +
      "for i in $(seq 1200); do [ -f run/ckpt/state.json ] && [ -f pid.1 ] && break; "
      "kill -0 $job || break; sleep 0.1; done; kill -" + signal + " $(cat pid.1); wait $job; "
      "kill -KILL $(cat pid.1) 2>/dev/null; cat job.log";
  std::ofstream(dir + "/break_rank_one.sh") << script << "\n";
  return e2e::run_command(dir, "bash break_rank_one.sh");
}

void expect_checkpoint_loads(const std::string& dir) {
  RunResult r = run_single(dir,
                           "train --dataset=sc --out_dir=run --init_from=resume --eval_only=True "
                           "--eval_iters=1 --batch_size=2");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("resumed from"), std::string::npos) << r.output;
}

TEST(DataParallelFailure, KilledRankEndsTheJobWithAClearError) {
  std::string dir = prepared_dir("kill");
  RunResult r = break_rank_one(dir, "KILL", "");
  EXPECT_EQ(r.output.find("mpirun exit 124"), std::string::npos) << "the job hung:\n" << r.output;
  EXPECT_EQ(r.output.find("mpirun exit 0"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("process rank 1"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("signal 9"), std::string::npos) << r.output;
  expect_checkpoint_loads(dir);
}

TEST(DataParallelFailure, SilentRankEndsTheJobAfterCommTimeout) {
  std::string dir = prepared_dir("stop");
  RunResult r = break_rank_one(dir, "STOP", "--comm_timeout=2");
  EXPECT_EQ(r.output.find("mpirun exit 124"), std::string::npos) << "the job hung:\n" << r.output;
  EXPECT_EQ(r.output.find("mpirun exit 0"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("rank 0 of 2: waited 2 s for the other ranks"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("comm_timeout = 2 s"), std::string::npos) << r.output;
  expect_checkpoint_loads(dir);
}

}  // namespace
}  // namespace nanogpt::mpi_test
