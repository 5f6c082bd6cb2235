// Helpers for end-to-end tests: run the built `nanogpt` binary in a scratch directory and read
// what it wrote.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace nanogpt::e2e {

struct RunResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs the shell command `command` with the working directory `cwd`.
inline RunResult run_command(const std::string& cwd, const std::string& command) {
  std::string cmd = "cd '" + cwd + "' && " + command + " 2>&1";
  RunResult r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), n);
  int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// Runs `nanogpt <args>` with the working directory `cwd`.
inline RunResult run_nanogpt(const std::string& cwd, const std::string& args) {
  return run_command(cwd, "OMP_NUM_THREADS=2 '" + std::string(NANOGPT_BINARY) + "' " + args);
}

// A fresh scratch directory for one test.
// Named after the build directory too, so test suites of several checkouts can run at once, and
// after the NANOGPT_CPU_TARGET cap, so that CTest's capped copies of a test (CMakeLists.txt) can
// run beside the uncapped one.
inline std::string scratch_dir(const std::string& name) {
  const size_t build = std::hash<std::string>{}(NANOGPT_BUILD_DIR) % 100000;
  const char* cap = std::getenv("NANOGPT_CPU_TARGET");
  const std::string capped = cap && *cap ? std::string("_cap_") + cap : "";
  auto dir = std::filesystem::temp_directory_path() /
             ("nanogpt_e2e_" + std::to_string(build) + capped + "_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

inline std::string shakespeare_path() {
  return std::string(NANOGPT_SHARED_DIR) + "/data/tinyshakespeare.txt";
}

// A fixture: each test gets its own scratch directory, named after its suite and its name (CTest
// runs tests as separate processes, in parallel), with char tinyshakespeare prepared in data/sc.
class ShakespeareTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = scratch_dir(std::string(info->test_suite_name()) + "_" + info->name());
    RunResult r = run_nanogpt(
        dir_, "prepare --tokenizer=char --input=" + shakespeare_path() + " --out_dir=data/sc");
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  std::string dir_;
};

inline std::vector<nlohmann::json> read_jsonl(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  }
  return out;
}

// metrics.jsonl as a map for bit-exact comparisons: "<iter>" for step records, "<iter>v" for
// evaluations, each the record's JSON text without the fields that vary with timing.
inline std::map<std::string, std::string> timing_free_records(const std::string& path) {
  std::map<std::string, std::string> out;
  for (auto j : read_jsonl(path)) {
    for (const char* k : {"ms", "elapsed_s", "tokens_per_s", "mfu", "peak_mem_bytes",
                          "peak_rss_bytes", "comm_wait_ms", "rank_peak_rss_bytes"}) {
      j.erase(k);
    }
    out[std::to_string(j["iter"].get<int64_t>()) + (j.contains("val_loss") ? "v" : "")] = j.dump();
  }
  return out;
}

// Starts the shell command `command` (a training run) in the background of a script in `cwd`,
// sends it `signal` (TERM, INT, USR1) once `metrics` (relative to cwd) holds the step record of
// iteration `after`, and waits: the run's output and exit status.
inline RunResult run_and_signal(const std::string& cwd, const std::string& command,
                                const std::string& metrics, const std::string& signal, int after) {
  const std::string script = cwd + "/signal_run.sh";
  std::ofstream(script) << command << " > signal_run.log 2>&1 &\n"
                        << "pid=$!\n"
                        // Up to 3 minutes: a loaded machine (the whole suite at -j 2 in a
                        // fresh root) may take more than 30 s to reach the step.
                        << "deadline=$((SECONDS + 180))\n"
                        << "while [ $SECONDS -lt $deadline ]; do\n"
                        << "  grep -q '\"iter\":" << after << ",\"loss\"' '" << metrics
                        << "' 2>/dev/null && break\n"
                        << "  kill -0 $pid 2>/dev/null || break\n"
                        << "  sleep 0.01\n"
                        << "done\n"
                        << "kill -" << signal << " $pid\n"
                        << "wait $pid\n"
                        << "rc=$?\n"
                        << "cat signal_run.log\n"
                        << "exit $rc\n";
  return run_command(cwd, "bash '" + script + "'");
}

// The bytes of the file at path ("" when it cannot be read).
inline std::string read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

// A run that trains to iter 4 (checkpoint at eval 4), then resumes with a learning rate of 1e30:
// the weights pass float range after one step, so the next loss (or its gradient) is not finite
// and the run must stop at iter 5 with a message naming each of `causes`, leaving iter 4's
// checkpoint byte-identical and resumable. `common` holds the model/data keys, eval_interval=4
// and out_dir=blowup.
inline void expect_non_finite_stop_keeps_checkpoint(const std::string& dir,
                                                    const std::string& common,
                                                    const std::vector<std::string>& causes) {
  RunResult r = run_nanogpt(dir, "train " + common + " --max_iters=4 --lr_decay_iters=4");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string state_before = read_file_bytes(dir + "/blowup/ckpt/state.json");
  const std::string weights_before = read_file_bytes(dir + "/blowup/ckpt/model.safetensors");
  r = run_nanogpt(dir, "train " + common +
                           " --init_from=resume --max_iters=12 --lr_decay_iters=12 "
                           "--learning_rate=1e30 --min_lr=1e30 --grad_clip=0 "
                           "--warmup_iters=0 --decay_lr=False --always_save_checkpoint=False");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  // (After the step at iter 4 the loss of iter 5 may still be finite, its gradient not.)
  EXPECT_NE(r.output.find("iter 5: the "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("is not finite"), std::string::npos) << r.output;
  for (const std::string& cause : causes) {
    EXPECT_NE(r.output.find(cause), std::string::npos) << cause << "\n" << r.output;
  }
  // The checkpoint is untouched: still iter 4's state and weights, and it resumes.
  EXPECT_TRUE(read_file_bytes(dir + "/blowup/ckpt/state.json") == state_before);
  EXPECT_TRUE(read_file_bytes(dir + "/blowup/ckpt/model.safetensors") == weights_before);
  r = run_nanogpt(dir, "train " + common + " --init_from=resume --max_iters=6 --lr_decay_iters=6");
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

}  // namespace nanogpt::e2e
