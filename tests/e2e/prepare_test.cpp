// End-to-end tests of `nanogpt prepare` on corpora that stream: peak memory within --memory_budget
// on a 300 MB corpus (fails if memory grows with the input), a full disk (a file size limit) gives
// a named error and keeps the old dataset, SIGKILL at arbitrary moments never leaves a set that
// looks complete, leftovers are announced, and llm.c shards of a gzip input train.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <map>

#include "data/synthetic_text.h"
#include "e2e_util.h"

namespace nanogpt::e2e {
namespace {

namespace fs = std::filesystem;

// Runs the binary with `args` (split at spaces) in cwd, stdout/stderr to /dev/null; returns the
// exit code and the child's peak RSS in bytes (wait4's ru_maxrss: this process only).
std::pair<int, int64_t> run_measured(const std::string& cwd, const std::vector<std::string>& args) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (chdir(cwd.c_str()) != 0) _exit(126);
    std::vector<char*> argv;
    std::string bin = NANOGPT_BINARY;
    argv.push_back(bin.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    freopen("/dev/null", "w", stdout);
    freopen("/dev/null", "w", stderr);
    setenv("OMP_NUM_THREADS", "2", 1);
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
  int status = 0;
  struct rusage usage {};
  if (wait4(pid, &status, 0, &usage) != pid) return {-1, 0};
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, int64_t{usage.ru_maxrss} * 1024};
}

std::map<std::string, std::string> snapshot(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::ifstream in(e.path(), std::ios::binary);
    files[e.path().filename().string()] = std::string(std::istreambuf_iterator<char>(in), {});
  }
  return files;
}

// The budget bounds text and tokens in flight, word caches, buffers; on top come the binary, its
// libraries, the GPT-2 vocabulary and merge tables and thread stacks: what the same command needs
// for a tiny input, measured here (about 25 MB on Debian 12), plus 8 MiB of allocator slack.
TEST(PrepareE2e, PeakMemoryStaysWithinTheBudgetWhateverTheCorpusSize) {
  const std::string dir = scratch_dir("prepare_memory");
  write_synthetic_corpus(dir + "/tiny.txt", 4096, 1, false);
  write_synthetic_corpus(dir + "/big.txt", 300'000'000, 1, false);
  const std::vector<std::string> keys = {"--tokenizer=gpt2", "--memory_budget=64M", "--threads=2",
                                         "--progress=False"};
  auto with = [&](const std::string& input, const std::string& out) {
    std::vector<std::string> a = {"prepare", "--input=" + input, "--out_dir=" + out};
    a.insert(a.end(), keys.begin(), keys.end());
    return a;
  };
  const auto [tiny_rc, fixed] = run_measured(dir, with("tiny.txt", "tiny_out"));
  ASSERT_EQ(tiny_rc, 0);
  const auto [rc, peak] = run_measured(dir, with("big.txt", "big_out"));
  ASSERT_EQ(rc, 0);
  const int64_t budget = int64_t{64} << 20;
  const int64_t allowed = budget + fixed + (int64_t{8} << 20);
  std::printf("peak RSS %.1f MB for 300 MB of text (fixed part %.1f MB, allowed %.1f MB)\n",
              static_cast<double>(peak) / 1e6, static_cast<double>(fixed) / 1e6,
              static_cast<double>(allowed) / 1e6);
  EXPECT_LE(peak, allowed) << "prepare's memory grew with the corpus";
  EXPECT_LT(fixed, int64_t{96} << 20) << "the part outside the budget should be tables only";
  // The output is all there: every token of 300 MB of text, uint16 each.
  const auto bytes =
      fs::file_size(dir + "/big_out/train.bin") + fs::file_size(dir + "/big_out/val.bin");
  std::ifstream in(dir + "/big_out/meta.json");
  const auto meta = nlohmann::json::parse(in);
  EXPECT_EQ(bytes, 2 * (meta["train_tokens"].get<uint64_t>() + meta["val_tokens"].get<uint64_t>()));
  EXPECT_GT(bytes, 100'000'000u);
  fs::remove_all(dir);
}

TEST(PrepareE2e, AFullDiskIsANamedErrorAndTheOldDatasetStays) {
  const std::string dir = scratch_dir("prepare_disk_full");
  RunResult r = run_nanogpt(
      dir, "prepare --tokenizer=char --input=" + shakespeare_path() + " --out_dir=data/sc");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto before = snapshot(dir + "/data/sc");
  // Writes past 1 MB fail with EFBIG (SIGXFSZ ignored), as they would with ENOSPC on a full disk.
  r = run_command(dir, "trap '' XFSZ; OMP_NUM_THREADS=2 prlimit --fsize=1000000 '" +
                           std::string(NANOGPT_BINARY) + "' prepare --tokenizer=char --input=" +
                           shakespeare_path() + " --out_dir=data/sc --val_fraction=0.2");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("writing 'data/sc/tokens_000000.partial' failed: File too large (is the "
                          "disk full?)"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(snapshot(dir + "/data/sc"), before) << "partial files left or old files touched";
}

TEST(PrepareE2e, KilledAtAnyMomentItLeavesNoSetThatLooksComplete) {
  const std::string dir = scratch_dir("prepare_kill");
  write_synthetic_corpus(dir + "/corpus.txt", 12'000'000, 3, false);
  const std::string cmd =
      "prepare --tokenizer=gpt2 --input=corpus.txt --out_dir=data/c --format=llmc "
      "--shard_tokens=500000 --threads=2";
  RunResult clean = run_nanogpt(dir, cmd + " --progress=False");
  ASSERT_EQ(clean.exit_code, 0) << clean.output;
  const auto complete = snapshot(dir + "/data/c");
  for (const char* after : {"0.05", "0.15", "0.3", "0.45"}) {
    SCOPED_TRACE(after);
    fs::remove_all(dir + "/data/c");
    std::system(("cd '" + dir + "' && OMP_NUM_THREADS=2 timeout -s KILL " + after + " '" +
                 NANOGPT_BINARY + "' " + cmd + " > /dev/null 2>&1")
                    .c_str());
    if (!fs::exists(dir + "/data/c")) continue;  // killed before it began
    const auto left = snapshot(dir + "/data/c");
    // The trainer's view: either it refuses the directory, or what it reads is the whole set.
    RunResult train = run_nanogpt(dir,
                                  "train --data_dir=data/c --max_iters=0 --eval_only=True "
                                  "--n_layer=1 --n_head=1 --n_embd=8 --block_size=8 "
                                  "--batch_size=1 --eval_iters=1");
    if (left.contains("meta.json") && !left.contains("prepare.incomplete")) {
      EXPECT_EQ(left, complete);
      EXPECT_EQ(train.exit_code, 0) << train.output;
    } else {
      EXPECT_NE(train.exit_code, 0) << train.output;
    }
    RunResult again = run_nanogpt(dir, cmd + " --progress=False");
    ASSERT_EQ(again.exit_code, 0) << again.output;
    EXPECT_EQ(snapshot(dir + "/data/c"), complete);
  }
}

TEST(PrepareE2e, LeftoversAreAnnouncedAndGzipLlmcShardsTrain) {
  const std::string dir = scratch_dir("prepare_shards");
  {  // tinyshakespeare gzip-compressed
    std::ifstream in(shakespeare_path(), std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), {});
    gzFile f = gzopen((dir + "/ts.txt.gz").c_str(), "wb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(gzwrite(f, text.data(), static_cast<unsigned>(text.size())),
              static_cast<int>(text.size()));
    ASSERT_EQ(gzclose(f), Z_OK);
  }
  fs::create_directories(dir + "/data/ts");
  std::ofstream(dir + "/data/ts/tokens_000000.partial") << "left by a killed prepare";
  RunResult r = run_nanogpt(dir,
                            "prepare --tokenizer=gpt2 --input=ts.txt.gz --out_dir=data/ts "
                            "--format=llmc --shard_tokens=100000");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("holds what an interrupted prepare left (tokens_000000.partial); "
                          "starting over"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("started over"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(dir + "/data/ts/train_000003.bin")) << r.output;
  EXPECT_FALSE(fs::exists(dir + "/data/ts/tokens_000000.partial"));
  RunResult t = run_nanogpt(dir,
                            "train --data_dir=data/ts --batch_size=2 --block_size=16 --n_layer=1 "
                            "--n_head=1 --n_embd=16 --max_iters=2 --eval_interval=2 "
                            "--eval_iters=1 --out_dir=run --sampling=sequential");
  ASSERT_EQ(t.exit_code, 0) << t.output;
  EXPECT_NE(t.output.find("iter 1: loss"), std::string::npos) << t.output;
}

}  // namespace
}  // namespace nanogpt::e2e
