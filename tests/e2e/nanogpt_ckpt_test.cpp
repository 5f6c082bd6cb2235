// nanoGPT's ckpt.pt through the CLI: a run trained here is exported with --format=nanogpt and
// continued from that file (the shared keys taken from its saved config, AdamW's moments and
// iteration carried, what is not carried said; its first evaluation equals the original run's at
// that iteration, bit for bit); `sample` reads it (tokenizer from data/<dataset>); a model nanoGPT
// cannot express is refused by name with nothing written; a checkpoint torch saved (fixture)
// trains on, and with another optimizer its AdamW state is said to be unused.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "e2e_util.h"

namespace nanogpt::e2e {
namespace {

const char* kKeys =
    "--dataset=sc --batch_size=4 --gradient_accumulation_steps=1 --block_size=32 --n_layer=2 "
    "--n_head=2 --n_embd=32 --learning_rate=3e-3 --warmup_iters=5 --lr_decay_iters=60 "
    "--min_lr=3e-4 --eval_interval=10 --eval_iters=2 --log_interval=5";

nlohmann::json eval_at(const std::string& metrics, int64_t iter) {
  for (const auto& j : read_jsonl(metrics)) {
    if (j.contains("val_loss") && j["iter"] == iter) return j;
  }
  return nullptr;
}

class NanoGptCkptCli : public ShakespeareTest {};

TEST_F(NanoGptCkptCli, ExportContinueAndSample) {
  RunResult r = run_nanogpt(
      dir_, std::string("train ") + kKeys + " --gelu=exact --bias=True --out_dir=a --max_iters=20");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_nanogpt(dir_, "export --format=nanogpt --out_dir=a");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("wrote a/ckpt.pt (nanoGPT's ckpt.pt"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("AdamW's moments at step 20, iter_num 20"), std::string::npos)
      << r.output;

  // Continue from it: only the model-free keys given differ; the rest come from its config.
  r = run_nanogpt(dir_, "train --init_from=a/ckpt.pt --out_dir=b --max_iters=30 --eval_iters=2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("from a/ckpt.pt's saved config (give a key to override it): "
                          "dataset = 'sc', eval_interval = 10, log_interval = 5"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("continuing nanoGPT's run a/ckpt.pt at iteration 20 (best val loss "),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("weights, AdamW's moments (step 20) taken"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("not carried over from a/ckpt.pt: the data position and the RNG "
                          "streams"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("model: 2 layers, 2 heads, 32 wide, context 32, vocab 65"),
            std::string::npos)
      << r.output;
  // The same weights: the evaluation at iteration 20 is the original run's, bit for bit.
  const nlohmann::json before = eval_at(dir_ + "/a/metrics.jsonl", 20);
  const nlohmann::json after = eval_at(dir_ + "/b/metrics.jsonl", 20);
  ASSERT_FALSE(before.is_null());
  ASSERT_FALSE(after.is_null()) << r.output;
  EXPECT_EQ(after["val_loss"], before["val_loss"]);
  EXPECT_EQ(after["train_loss"], before["train_loss"]);
  EXPECT_FALSE(eval_at(dir_ + "/b/metrics.jsonl", 30).is_null());

  r = run_nanogpt(dir_, "sample --init_from=a/ckpt.pt --max_new_tokens=20 --num_samples=1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("from a/ckpt.pt"), std::string::npos) << r.output;
  // And on to the other formats.
  r = run_nanogpt(dir_, "export --init_from=a/ckpt.pt --format=hf --output=b/model.safetensors");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/b/model.safetensors"));
}

TEST_F(NanoGptCkptCli, ModelsNanoGptLacksAreRefusedWithNothingWritten) {
  RunResult r = run_nanogpt(dir_, std::string("train ") + kKeys + " --out_dir=t --max_iters=2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_nanogpt(dir_, "export --format=nanogpt --out_dir=t");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("gelu = 'tanh'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--gelu=exact"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/t/ckpt.pt"));
  r = run_nanogpt(dir_, std::string("train ") + kKeys +
                            " --gelu=exact --norm=rmsnorm --out_dir=r --max_iters=2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_nanogpt(dir_, "export --format=nanogpt --out_dir=r --output=r.pt");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("norm = 'rmsnorm'"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/r.pt"));
  r = run_nanogpt(dir_, "export --format=pt --out_dir=r");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("'llmc', 'hf' or 'nanogpt'"), std::string::npos) << r.output;
}

TEST_F(NanoGptCkptCli, TrainsOnFromACheckpointTorchSaved) {
  const std::string fixture =
      std::string(NANOGPT_SOURCE_DIR) + "/tests/fixtures/nanogpt/nanogpt_bias.pt";
  // Its config names shakespeare_char, batch 64 and 5000 iterations: give what differs here.
  RunResult r = run_nanogpt(dir_, "train --init_from=" + fixture +
                                      " --dataset=sc --batch_size=4 --max_iters=6 "
                                      "--eval_interval=3 --eval_iters=2 --out_dir=f");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("at iteration 3 (best val loss 2.5000): weights, AdamW's moments "
                          "(step 3) taken; 2 causal-mask buffers (attn.bias) ignored"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("beta2 = 0.99"), std::string::npos) << r.output;  // from its config
  EXPECT_NE(r.output.find("done: iteration 6"), std::string::npos) << r.output;

  r = run_nanogpt(dir_, "train --init_from=" + fixture +
                            " --dataset=sc --batch_size=4 --max_iters=4 --eval_interval=100 "
                            "--optimizer=muon --out_dir=m");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("its AdamW state is not used: this run's optimizer is 'muon'"),
            std::string::npos)
      << r.output;

  // A file that is not a checkpoint: named.
  r = run_nanogpt(dir_, "train --init_from=data/sc/meta.json --dataset=sc --out_dir=x");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("data/sc/meta.json"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace nanogpt::e2e
