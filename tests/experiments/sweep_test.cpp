// `nanogpt sweep` end to end on the shipped smoke sweep (a 2 x 2 grid plus a variation that fails):
// rows in results.csv, skipping recorded runs on a rerun, resuming the run a kill interrupted from
// its checkpoint, a failing run recorded with the trainer's error; and `nanogpt report` on the
// results, on a run still going and on a single training run; a signalled sweep stops its run with
// a checkpoint and resumes it when rerun.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "experiments/results_csv.h"
#include "experiments_test_util.h"

namespace nanogpt {
namespace {

namespace fs = std::filesystem;
using namespace experiments_test;

int64_t count_of(const std::string& text, const std::string& what) {
  int64_t n = 0;
  for (size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

// dir/base.py: a 2-layer, 32-wide model on dir/data that trains at about a millisecond a step.
void write_tiny_base(const std::string& dir) {
  std::ofstream(dir + "/base.py") << "data_dir = 'data'\nbatch_size = 4\nblock_size = 32\n"
                                     "n_layer = 2\nn_head = 2\nn_embd = 32\n"
                                     "gradient_accumulation_steps = 1\neval_iters = 2\n"
                                     "learning_rate = 1e-3\nwarmup_iters = 10\n";
}

TEST(Sweep, SmokeGridRowsSkipOnRerunAndFailureRecorded) {
  const std::string dir = scratch_dir("sweep_smoke");
  write_dataset(dir + "/data");
  // The shipped 2 x 2 smoke sweep, on the test's dataset, plus an optimization whose config the
  // trainer rejects (n_head must divide n_embd).
  const std::string sweep = std::string("sweep ") + NANOGPT_SOURCE_DIR +
                            "/config/sweep_smoke.py --data_dir=data --out_dir=sw "
                            "--optim_broken=--n_head=3";
  RunResult first = run_nanogpt(dir, sweep);
  EXPECT_EQ(first.exit_code, 3) << first.output;  // 3: some runs failed
  std::vector<ResultRow> rows = read_results_csv(dir + "/sw/results.csv");
  ASSERT_EQ(rows.size(), 6u) << first.output;
  int ok = 0, failed = 0;
  for (const ResultRow& r : rows) {
    if (r.at("status") == "ok") {
      ++ok;
      EXPECT_EQ(r.at("iters"), "30") << r.at("name");
      EXPECT_EQ(r.at("tokens"), std::to_string(30 * 4 * 32)) << r.at("name");
      EXPECT_GT(std::stod(r.at("val_loss")), 0.0);
      EXPECT_GT(std::stoll(r.at("peak_tracked_bytes")), 0);
      EXPECT_GE(std::stoll(r.at("peak_rss_bytes")), std::stoll(r.at("peak_tracked_bytes")));
      EXPECT_GT(std::stoll(r.at("params")), 0);
      EXPECT_GT(std::stod(r.at("ms_per_iter")), 0.0);
      EXPECT_TRUE(r.at("error").empty());
      // target_iter, when set, is an evaluation at which val loss was <= the target
      if (!r.at("target_iter").empty()) {
        EXPECT_GE(std::stod(r.at("target_s")), 0.0);
      }
    } else {
      ++failed;
      EXPECT_EQ(r.at("status"), "failed");
      EXPECT_EQ(r.at("optim"), "broken");
      EXPECT_NE(r.at("error").find("n_head"), std::string::npos) << r.at("error");
    }
  }
  EXPECT_EQ(ok, 4);
  EXPECT_EQ(failed, 2);
  EXPECT_TRUE(fs::exists(dir + "/sw/runs/layers_x2.sgd_cosine.s1337/metrics.jsonl"));

  // Rerun: everything is recorded, nothing runs, no row is added.
  RunResult again = run_nanogpt(dir, sweep);
  EXPECT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.output.find("0 runs ran"), std::string::npos) << again.output;
  EXPECT_NE(again.output.find("6 already recorded"), std::string::npos) << again.output;
  EXPECT_EQ(read_results_csv(dir + "/sw/results.csv").size(), 6u);

  // The report of the grid.
  RunResult report = run_nanogpt(dir, "report sw");
  ASSERT_EQ(report.exit_code, 0) << report.output;
  const std::string md = read_text(dir + "/sw/report.md");
  EXPECT_NE(md.find("Table 1"), std::string::npos);
  EXPECT_NE(md.find("| none | layers_x2 | 1 |"), std::string::npos) << md;
  EXPECT_NE(md.find("Figure 5"), std::string::npos);
  EXPECT_NE(md.find("Failed runs"), std::string::npos);
  EXPECT_TRUE(fs::exists(dir + "/sw/report.html"));
}

// A scratch folder with the tiny dataset and base config, and sweep.py: `seeds` seeds of the
// default model without variations, max_iters iterations (cosine to the end), an evaluation every
// eval_interval, a log line every 10, results in sw/.
std::string tiny_sweep(const std::string& name, int seeds, int max_iters, int eval_interval) {
  const std::string dir = scratch_dir(name);
  write_dataset(dir + "/data");
  write_tiny_base(dir);
  std::ofstream(dir + "/sweep.py") << "base = 'base.py'\nout_dir = 'sw'\nseeds = " << seeds
                                   << "\nmax_iters = " << max_iters
                                   << "\nlr_decay_iters = " << max_iters
                                   << "\neval_interval = " << eval_interval
                                   << "\nlog_interval = 10\n";
  return dir;
}

TEST(Sweep, KilledSweepResumesTheUnfinishedRunFromItsCheckpoint) {
  const std::string dir = tiny_sweep("sweep_kill", 1, 4000, 100);
  const std::string metrics = dir + "/sw/runs/default.none.s1337/metrics.jsonl";
  const std::string state = dir + "/sw/runs/default.none.s1337/ckpt/state.json";
  RunResult start = run_command(dir, "OMP_NUM_THREADS=2 '" + std::string(NANOGPT_BINARY) +
                                         "' sweep sweep.py > first.log 2>&1 & echo $!");
  const pid_t pid = static_cast<pid_t>(std::stol(start.output));
  // Wait for a checkpoint beyond the first eval, then kill the sweep (not its child: the child
  // must die with it).
  bool killed = false;
  for (int i = 0; i < 6000 && !killed; ++i) {  // up to 2 minutes on a loaded machine
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (fs::exists(state) && read_text(metrics).find("\"iter\":200,\"train_loss\"") != std::string::npos) {
      ::kill(pid, SIGKILL);
      killed = true;
    }
  }
  ASSERT_TRUE(killed) << read_text(dir + "/first.log");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const auto size_after_kill = fs::file_size(metrics);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(fs::file_size(metrics), size_after_kill) << "the training process outlived the sweep";
  ASSERT_FALSE(read_text(metrics).find("\"iter\":4000,\"train_loss\"") != std::string::npos)
      << "the run finished before the kill; the test needs it unfinished";
  EXPECT_FALSE(fs::exists(dir + "/sw/results.csv") &&
               !read_results_csv(dir + "/sw/results.csv").empty());

  // A run still going (or interrupted) is reported from its metrics.jsonl as it is.
  RunResult partial = run_nanogpt(dir, "report sw");
  ASSERT_EQ(partial.exit_code, 0) << partial.output;
  EXPECT_NE(read_text(dir + "/sw/report.md").find("| default.none.s1337 | running |"),
            std::string::npos)
      << read_text(dir + "/sw/report.md");

  // Resume, finishing at iteration 300 (a shorter max_iters keeps the test fast; the run picks up
  // at its checkpoint either way).
  RunResult resumed = run_nanogpt(dir, "sweep sweep.py --max_iters=300");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("resuming from its checkpoint"), std::string::npos)
      << resumed.output;
  EXPECT_NE(read_text(dir + "/sw/runs/default.none.s1337/train.log").find("resumed from"),
            std::string::npos);
  std::vector<ResultRow> rows = read_results_csv(dir + "/sw/results.csv");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].at("status"), "ok");
  EXPECT_EQ(rows[0].at("iters"), "300");
  // metrics.jsonl reads as one run: each evaluation once.
  EXPECT_EQ(count_of(read_text(metrics), "\"iter\":200,\"train_loss\""), 1);

  // A single training run's out_dir reports its curves.
  RunResult single = run_nanogpt(dir, "report sw/runs/default.none.s1337");
  ASSERT_EQ(single.exit_code, 0) << single.output;
  EXPECT_NE(read_text(dir + "/sw/runs/default.none.s1337/report.md").find("One training run"),
            std::string::npos);
}

// SIGTERM to a sweep is passed on to its running training, which stops at a step boundary with
// its checkpoint: the sweep records no row for it, says so, exits with status 75, and its rerun
// resumes that run.
TEST(Sweep, SignalledSweepStopsItsRunWithACheckpointAndTheRerunResumesIt) {
  const std::string dir = tiny_sweep("sweep_term", 1, 4000, 100);
  const std::string run_dir = dir + "/sw/runs/default.none.s1337";
  RunResult stopped = e2e::run_and_signal(
      dir, "OMP_NUM_THREADS=2 '" + std::string(NANOGPT_BINARY) + "' sweep sweep.py",
      "sw/runs/default.none.s1337/metrics.jsonl", "TERM", 150);
  ASSERT_EQ(stopped.exit_code, 75) << stopped.output;
  EXPECT_NE(stopped.output.find("default.none.s1337 stopped by SIGTERM with its checkpoint in "),
            std::string::npos)
      << stopped.output;
  EXPECT_NE(stopped.output.find("sweep sw stopped by SIGTERM: 0 runs ran"), std::string::npos)
      << stopped.output;
  EXPECT_NE(read_text(run_dir + "/train.log").find("stopped by SIGTERM before iteration "),
            std::string::npos)
      << read_text(run_dir + "/train.log");
  EXPECT_TRUE(fs::exists(run_dir + "/ckpt/state.json"));
  EXPECT_TRUE(!fs::exists(dir + "/sw/results.csv") ||
              read_results_csv(dir + "/sw/results.csv").empty());

  // Where the signal stopped it depends on this machine's speed: the rerun goes 50 further.
  const std::string log = read_text(run_dir + "/train.log");
  const std::string marker = "stopped by SIGTERM before iteration ";
  const size_t at = log.find(marker);
  ASSERT_NE(at, std::string::npos) << log;
  const int stopped_at = std::stoi(log.substr(at + marker.size()));
  const int end = stopped_at + 50;
  RunResult resumed = run_nanogpt(dir, "sweep sweep.py --max_iters=" + std::to_string(end));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("resuming from its checkpoint"), std::string::npos)
      << resumed.output;
  std::vector<ResultRow> rows = read_results_csv(dir + "/sw/results.csv");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].at("status"), "ok");
  EXPECT_EQ(rows[0].at("iters"), std::to_string(end));
}

// A kill between the checkpoint's two renames leaves only `ckpt.old` (io/atomic_dir.h): the sweep
// resumes from it rather than starting the run over. Made here by hand: a finished run's
// checkpoint moved to ckpt.old and its results row removed.
TEST(Sweep, RunWhoseCheckpointIsOnlyTheOldVersionResumes) {
  const std::string dir = tiny_sweep("sweep_old_ckpt", 1, 200, 100);
  RunResult first = run_nanogpt(dir, "sweep sweep.py");
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const std::string run_dir = dir + "/sw/runs/default.none.s1337";
  ASSERT_TRUE(fs::exists(run_dir + "/ckpt/state.json"));
  fs::rename(run_dir + "/ckpt", run_dir + "/ckpt.old");
  fs::remove(dir + "/sw/results.csv");

  RunResult resumed = run_nanogpt(dir, "sweep sweep.py --max_iters=300");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("resuming from its checkpoint"), std::string::npos)
      << resumed.output;
  EXPECT_NE(read_text(run_dir + "/train.log").find("resumed from"), std::string::npos);
  std::vector<ResultRow> rows = read_results_csv(dir + "/sw/results.csv");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].at("iters"), "300");
}

// The live progress line: run k of n, its iteration and loss, elapsed time and the ETA of the whole
// grid (unknown until a run has been timed or 2% of one has passed). --progress=live forces it
// into a pipe, so its content is checked without a terminal and without depending on how fast this
// machine trains: updates every 20 ms over runs of about a second.
TEST(Sweep, LiveProgressLineShowsRunIterationLossAndEta) {
  const std::string dir = tiny_sweep("sweep_live", 2, 300, 150);
  RunResult live = run_nanogpt(dir, "sweep sweep.py --progress=live --progress_interval=0.02");
  ASSERT_EQ(live.exit_code, 0) << live.output;
  const std::string& out = live.output;
  // A live update of the first run: cleared line, run 1 of 2, iteration of 300, its loss, ETA.
  const std::string first = "\r\033[K[1/2] default.none.s1337: iter ";
  const size_t at = out.find(first);
  ASSERT_NE(at, std::string::npos) << out;
  const std::string line = out.substr(at + 4, out.find('\r', at + 1) - at - 4);
  EXPECT_NE(line.find("/300, loss "), std::string::npos) << line;
  EXPECT_NE(line.find("elapsed, ETA "), std::string::npos) << line;
  // The second run's updates know the first run's time, so their ETA is a duration, not "?".
  const size_t second = out.find("\r\033[K[2/2] default.none.s1338: iter ");
  ASSERT_NE(second, std::string::npos) << out;
  const std::string line2 = out.substr(second + 4, out.find('\r', second + 1) - second - 4);
  EXPECT_EQ(line2.find("ETA ?"), std::string::npos) << line2;
  // Iterations shown never go back within a run; the last update of run 1 is past its start.
  int64_t last_iter = -1;
  for (size_t pos = out.find(first); pos != std::string::npos; pos = out.find(first, pos + 1)) {
    const int64_t iter = std::stoll(out.substr(pos + first.size()));
    EXPECT_GE(iter, last_iter) << out;
    last_iter = iter;
  }
  EXPECT_GT(last_iter, 0) << out;
  EXPECT_NE(out.find("[2/2] default.none.s1338 done: val loss"), std::string::npos) << out;

  // Piped without --progress (auto): the started/done lines only, no live line; so with lines.
  RunResult piped = run_nanogpt(dir, "sweep sweep.py --out_dir=sw2 --max_iters=20");
  ASSERT_EQ(piped.exit_code, 0) << piped.output;
  EXPECT_EQ(piped.output.find("\033[K"), std::string::npos) << piped.output;
  EXPECT_NE(piped.output.find("[1/2] default.none.s1337 done"), std::string::npos) << piped.output;

  RunResult bad = run_nanogpt(dir, "sweep sweep.py --progress=sometimes");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.output.find("progress expects auto, live or lines, got 'sometimes'"),
            std::string::npos)
      << bad.output;
  RunResult bad_interval = run_nanogpt(dir, "sweep sweep.py --progress_interval=0");
  EXPECT_EQ(bad_interval.exit_code, 1);
  EXPECT_NE(bad_interval.output.find("progress_interval expects seconds"), std::string::npos)
      << bad_interval.output;
}

// --progress=auto finds the terminal: under `script` (util-linux), which gives the sweep a
// pseudo-terminal, the live line appears; with --progress=lines it does not. Where this machine
// cannot make a pseudo-terminal (a sandbox without /dev/pts) there is no terminal to find, and the
// test says so and skips. script's own stdin is /dev/null: a closed stdin (as under some CI runners)
// makes it print nothing.
TEST(Sweep, AutoProgressFindsATerminal) {
  const std::string dir = tiny_sweep("sweep_tty", 1, 100, 100);
  const auto under_a_terminal = [&](const std::string& options) {
    return run_command(dir, "OMP_NUM_THREADS=2 script -qefc \"'" + std::string(NANOGPT_BINARY) +
                                "' sweep sweep.py " + options + "\" /dev/null </dev/null");
  };
  RunResult tty = under_a_terminal("--progress_interval=0.01");
  if (tty.exit_code != 0 && tty.output.find("pseudo-terminal") != std::string::npos) {
    GTEST_SKIP() << "no pseudo-terminal here: " << tty.output;
  }
  ASSERT_EQ(tty.exit_code, 0) << tty.output;
  EXPECT_NE(tty.output.find("\r\033[K[1/1] default.none.s1337: iter "), std::string::npos)
      << tty.output;
  RunResult lines = under_a_terminal("--out_dir=sw2 --progress=lines");
  ASSERT_EQ(lines.exit_code, 0) << lines.output;
  EXPECT_EQ(lines.output.find("\033[K"), std::string::npos) << lines.output;
  EXPECT_NE(lines.output.find("[1/1] default.none.s1337 done"), std::string::npos) << lines.output;
}

TEST(Sweep, BadSweepFilesFailBeforeAnythingRuns) {
  const std::string dir = scratch_dir("sweep_bad");
  std::ofstream(dir + "/typo.py") << "out_dir = 'sw'\nmax_iter = 10\n";
  RunResult typo = run_nanogpt(dir, "sweep typo.py");
  EXPECT_EQ(typo.exit_code, 1);
  EXPECT_NE(typo.output.find("typo.py:2"), std::string::npos) << typo.output;
  EXPECT_NE(typo.output.find("max_iters"), std::string::npos) << typo.output;  // did you mean
  std::ofstream(dir + "/variation.py") << "out_dir = 'sw'\nmodel_big = '--n_layer'\n";
  RunResult variation = run_nanogpt(dir, "sweep variation.py");
  EXPECT_EQ(variation.exit_code, 1);
  EXPECT_NE(variation.output.find("model_big"), std::string::npos) << variation.output;
  std::ofstream(dir + "/seeds.py") << "out_dir = 'sw'\nseeds = 'one,two'\n";
  RunResult seeds = run_nanogpt(dir, "sweep seeds.py");
  EXPECT_EQ(seeds.exit_code, 1);
  EXPECT_NE(seeds.output.find("'one' is not an integer"), std::string::npos) << seeds.output;
  std::ofstream(dir + "/base.py") << "base = 'missing.py'\n";
  RunResult base = run_nanogpt(dir, "sweep base.py");
  EXPECT_EQ(base.exit_code, 1);
  EXPECT_NE(base.output.find("missing.py"), std::string::npos) << base.output;
  std::ofstream(dir + "/outdir.py") << "model_x = '--out_dir=elsewhere'\n";
  RunResult outdir = run_nanogpt(dir, "sweep outdir.py");
  EXPECT_EQ(outdir.exit_code, 1);
  EXPECT_NE(outdir.output.find("set by the sweep"), std::string::npos) << outdir.output;
  EXPECT_FALSE(fs::exists(dir + "/sw"));
  RunResult noreport = run_nanogpt(dir, "report " + dir);
  EXPECT_EQ(noreport.exit_code, 1);
  EXPECT_NE(noreport.output.find("neither results.csv"), std::string::npos) << noreport.output;
}

TEST(ResultsCsv, QuotesRoundTrip) {
  const std::string dir = scratch_dir("results_csv");
  const std::string path = dir + "/results.csv";
  ResultRow row;
  row["name"] = "a.b.s1";
  row["status"] = "failed";
  row["error"] = "exit code 1: dtype = 'x', \"quoted\", and a\nnewline";
  append_results_row(path, row);
  append_results_row(path, row);
  std::vector<ResultRow> rows = read_results_csv(path);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].at("error"), "exit code 1: dtype = 'x', \"quoted\", and a newline");
  EXPECT_EQ(rows[1].at("name"), "a.b.s1");
  EXPECT_EQ(rows[1].at("iters"), "");
}

}  // namespace
}  // namespace nanogpt
