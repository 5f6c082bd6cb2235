// The installed binary is self-contained: `cmake --install` into a temporary prefix, then, from
// unrelated working directories with no data folder, prepare a GPT-2 dataset (the vocabulary is
// built in), train with an installed config, and sample.
#include <gtest/gtest.h>

#include <filesystem>

#include "e2e_util.h"

namespace nanogpt::e2e {
namespace {

namespace fs = std::filesystem;

TEST(Install, InstalledBinaryPreparesTrainsAndSamplesFromAnyDirectory) {
  const fs::path root = scratch_dir("install");
  const fs::path prefix = root / "prefix";
  RunResult r =
      run_command(root.string(), std::string("'") + NANOGPT_CMAKE_COMMAND + "' --install '" +
                                     NANOGPT_BUILD_DIR + "' --prefix '" + prefix.string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const fs::path bin = prefix / "bin" / "nanogpt";
  ASSERT_TRUE(fs::is_regular_file(bin)) << r.output;
  for (const char* config : {"smoke.py", "train_gpt2.py", "train_shakespeare_char.py",
                             "train_shakespeare_char_cpu.py", "quickstart_brown_char.py"}) {
    EXPECT_TRUE(fs::is_regular_file(prefix / "share/nanogpt/config" / config)) << config;
  }
  const std::string nanogpt = "OMP_NUM_THREADS=2 '" + bin.string() + "' ";

  // A working directory that has nothing but a small text file.
  const fs::path work = root / "work";
  fs::create_directories(work);
  {
    std::ifstream in(shakespeare_path(), std::ios::binary);
    std::string text(60000, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    std::ofstream(work / "input.txt", std::ios::binary) << text;
  }
  r = run_command(work.string(),
                  nanogpt + "prepare --tokenizer=gpt2 --input=input.txt --out_dir=data/g");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream meta_in(work / "data/g/meta.json");
  const auto meta = nlohmann::json::parse(meta_in);
  EXPECT_EQ(meta["tokenizer"], "gpt2");
  EXPECT_FALSE(meta.contains("vocab_dir")) << meta.dump();  // the built-in vocabulary

  r = run_command(work.string(), nanogpt + "train '" +
                                     (prefix / "share/nanogpt/config/smoke.py").string() +
                                     "' --dataset=g --out_dir=out --max_iters=6 --eval_interval=3 "
                                     "--lr_decay_iters=6 --log_interval=3");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(work / "out/ckpt/model.safetensors")) << r.output;

  r = run_command(work.string(), nanogpt +
                                     "sample --out_dir=out --num_samples=1 --max_new_tokens=16 "
                                     "--start=\"ROMEO:\" --seed=3");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("ROMEO:"), std::string::npos) << r.output;

  // From another empty directory (the run's relative data_dir is not there): the checkpoint's
  // GPT-2 vocabulary size selects the built-in tokenizer.
  const fs::path elsewhere = root / "elsewhere";
  fs::create_directories(elsewhere);
  r = run_command(elsewhere.string(),
                  nanogpt + "sample --out_dir='" + (work / "out").string() +
                      "' --num_samples=1 --max_new_tokens=8 --start=\"JULIET:\"");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("JULIET:"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace nanogpt::e2e
