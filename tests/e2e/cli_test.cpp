// End-to-end tests of the `nanogpt` binary: prepare -> train -> resume -> sample -> export on
// tinyshakespeare, bit-exact resume, and the error messages users see.
#include <gtest/gtest.h>

#include <filesystem>

#include "e2e_util.h"

namespace nanogpt::e2e {
namespace {

namespace fs = std::filesystem;

// A small run's keys (CPU-recipe-like shapes, tiny so the suite stays fast).
const char* kTiny =
    "--dataset=sc --batch_size=4 --gradient_accumulation_steps=2 --block_size=32 --n_layer=2 "
    "--n_head=2 --n_embd=32 "
    "--learning_rate=1e-3 --warmup_iters=2 --min_lr=1e-4 --eval_iters=2 --log_interval=1 "
    "--always_save_checkpoint=True";

class CliTest : public ShakespeareTest {};

TEST_F(CliTest, PrepareWritesNanogptSplit) {
  EXPECT_EQ(fs::file_size(dir_ + "/data/sc/train.bin"), 1003854u * 2);
  EXPECT_EQ(fs::file_size(dir_ + "/data/sc/val.bin"), 111540u * 2);
  std::ifstream in(dir_ + "/data/sc/meta.json");
  auto meta = nlohmann::json::parse(in);
  EXPECT_EQ(meta["vocab_size"].get<int>(), 65);
}

TEST_F(CliTest, HelpListsEveryKeyWithTypeAndDefault) {
  RunResult r = run_nanogpt(dir_, "train --help");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("--batch_size (int)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--learning_rate (float)"), std::string::npos);
  EXPECT_NE(r.output.find("--init_from (str)"), std::string::npos);
  r = run_nanogpt(dir_, "help prepare");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("--tokenizer (str)"), std::string::npos) << r.output;
  r = run_nanogpt(dir_, "--help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("sample"), std::string::npos);
}

TEST_F(CliTest, ConfigErrorsAreClear) {
  RunResult r = run_nanogpt(dir_, "train --batch_sise=3");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("unknown key 'batch_sise'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("'batch_size'"), std::string::npos) << r.output;
  r = run_nanogpt(dir_, "train --batch_size=1.5");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("expects int"), std::string::npos) << r.output;
  r = run_nanogpt(dir_, "train missing_config.py");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("missing_config.py"), std::string::npos) << r.output;
  r = run_nanogpt(dir_, "train --dataset=nope --max_iters=1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("data/nope/train.bin"), std::string::npos) << r.output;
  r = run_nanogpt(dir_, "train --dtype=float64");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("dtype"), std::string::npos) << r.output;
  r = run_nanogpt(dir_, "train --attention=sparse");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("attention = 'sparse': expected 'flash' (the default) or 'naive'"),
            std::string::npos)
      << r.output;
  r = run_nanogpt(dir_, "frobnicate");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("unknown command 'frobnicate'"), std::string::npos) << r.output;
}

TEST_F(CliTest, EveryShippedConfigParses) {
  for (const auto& entry : fs::directory_iterator(std::string(NANOGPT_SOURCE_DIR) + "/config")) {
    // --max_iters=0 --eval_only: parse and validate only... the data may not exist, so we ask for
    // help after the config, which parses the files first.
    RunResult r = run_nanogpt(dir_, "train " + entry.path().string() + " --help");
    EXPECT_EQ(r.exit_code, 0) << entry.path() << "\n" << r.output;
  }
}

// Loss records (iter -> exact JSON text of loss / val_loss) from metrics.jsonl.
std::map<std::string, std::string> loss_records(const std::string& path) {
  std::map<std::string, std::string> out;
  for (const auto& j : read_jsonl(path)) {
    std::string iter = std::to_string(j["iter"].get<int64_t>());
    if (j.contains("loss")) out["loss@" + iter] = j["loss"].dump();
    if (j.contains("val_loss"))
      out["val@" + iter] = j["val_loss"].dump() + "/" + j["train_loss"].dump();
  }
  return out;
}

// Trains `keys` for `iters` iterations into <dir>/straight, and into <dir>/halves in two runs (to
// iters / 2, then resumed to iters, the same schedule); expects the same loss records, bit for bit.
void expect_resume_bit_exact(const std::string& dir, const std::string& keys, int iters) {
  const std::string train =
      "train " + keys + " --lr_decay_iters=" + std::to_string(iters) + " --max_iters=";
  RunResult a = run_nanogpt(dir, train + std::to_string(iters) + " --out_dir=straight");
  ASSERT_EQ(a.exit_code, 0) << a.output;
  RunResult b1 = run_nanogpt(dir, train + std::to_string(iters / 2) + " --out_dir=halves");
  ASSERT_EQ(b1.exit_code, 0) << b1.output;
  RunResult b2 =
      run_nanogpt(dir, train + std::to_string(iters) + " --out_dir=halves --init_from=resume");
  ASSERT_EQ(b2.exit_code, 0) << b2.output;
  EXPECT_EQ(loss_records(dir + "/straight/metrics.jsonl"),
            loss_records(dir + "/halves/metrics.jsonl"));
}

TEST_F(CliTest, ResumeIsBitExactWithDropoutAndRandomSampling) {
  std::string common = std::string(kTiny) + " --dropout=0.1 --sampling=random --eval_interval=5";
  expect_resume_bit_exact(dir_, common, 20);
  // 20 steps, evals at 0, 5, 10, 15, 20
  EXPECT_EQ(loss_records(dir_ + "/straight/metrics.jsonl").size(), 20u + 5u);
}

// ema_decay: training is unchanged (the same weights bit for bit as without it), the evaluations
// after ema_from run on the average (other losses; the same before it), the checkpoint keeps the
// average and a resumed run continues it bit for bit; resuming with other ema keys is refused
// naming them.
TEST_F(CliTest, WeightAverageEvaluatesWithoutChangingTrainingAndResumesBitExactly) {
  const std::string keys = std::string(kTiny) + " --eval_interval=5";
  const std::string ema = " --ema_decay=0.8 --ema_from=7";
  const std::string train = "train " + keys + " --lr_decay_iters=20 --max_iters=";
  RunResult plain = run_nanogpt(dir_, train + "20 --out_dir=plain");
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  expect_resume_bit_exact(dir_, keys + ema, 20);  // into straight/ and halves/
  EXPECT_EQ(read_file_bytes(dir_ + "/straight/ckpt/model.safetensors"),
            read_file_bytes(dir_ + "/plain/ckpt/model.safetensors"));
  EXPECT_EQ(read_file_bytes(dir_ + "/straight/ckpt/optimizer.safetensors"),
            read_file_bytes(dir_ + "/halves/ckpt/optimizer.safetensors"));
  const auto with = loss_records(dir_ + "/straight/metrics.jsonl");
  const auto without = loss_records(dir_ + "/plain/metrics.jsonl");
  EXPECT_EQ(with.at("val@5"), without.at("val@5"));    // before the average starts (at 6)
  EXPECT_NE(with.at("val@10"), without.at("val@10"));  // on the average
  EXPECT_NE(with.at("val@20"), without.at("val@20"));
  EXPECT_EQ(with.at("loss@19"), without.at("loss@19"));  // training itself unchanged
  const std::string opt = read_file_bytes(dir_ + "/straight/ckpt/optimizer.safetensors");
  EXPECT_NE(opt.find("\"ema.wte.weight\""), std::string::npos);
  // sample and export (llm.c, HF) run on the average by default, the trained weights with
  // --ema=False: those are the run without the average's, byte for byte.
  const std::string draw = " --num_samples=1 --max_new_tokens=24 --seed=3 --start=ROMEO:";
  RunResult avg = run_nanogpt(dir_, "sample --out_dir=straight" + draw);
  RunResult trained = run_nanogpt(dir_, "sample --out_dir=straight --ema=False" + draw);
  RunResult plain_draw = run_nanogpt(dir_, "sample --out_dir=plain" + draw);
  ASSERT_EQ(avg.exit_code, 0) << avg.output;
  EXPECT_NE(avg.output.find("weights: the run's moving average"), std::string::npos) << avg.output;
  EXPECT_EQ(trained.output.find("moving average"), std::string::npos) << trained.output;
  auto text = [](const std::string& out) { return out.substr(0, out.find("\n---")); };
  EXPECT_EQ(text(trained.output), text(plain_draw.output));
  for (const char* which : {"avg", "trained", "plain"}) {
    const std::string from = std::string(which) == "plain" ? "plain" : "straight";
    const std::string flag = std::string(which) == "trained" ? " --ema=False" : "";
    RunResult e = run_nanogpt(
        dir_, "export --format=llmc --out_dir=" + from + flag + " --output=" + which + ".bin");
    ASSERT_EQ(e.exit_code, 0) << e.output;
  }
  EXPECT_EQ(read_file_bytes(dir_ + "/trained.bin"), read_file_bytes(dir_ + "/plain.bin"));
  EXPECT_NE(read_file_bytes(dir_ + "/avg.bin"), read_file_bytes(dir_ + "/plain.bin"));

  RunResult other = run_nanogpt(
      dir_, train + "25 --out_dir=straight --init_from=resume " + "--ema_decay=0.9 --ema_from=7");
  EXPECT_NE(other.exit_code, 0);
  EXPECT_NE(other.output.find("resume with --ema_decay=0.8 --ema_from=7"), std::string::npos)
      << other.output;
  RunResult none = run_nanogpt(dir_, train + "25 --out_dir=plain --init_from=resume" + ema);
  EXPECT_NE(none.exit_code, 0);
  EXPECT_NE(none.output.find("trained with ema_decay = 0"), std::string::npos) << none.output;
  RunResult zero = run_nanogpt(dir_, train + "2 --out_dir=z --zero_stage=1" + ema);
  EXPECT_NE(zero.exit_code, 0);
  EXPECT_NE(zero.output.find("--zero_stage=0 or --ema_decay=0"), std::string::npos) << zero.output;
}

TEST_F(CliTest, TrainSampleAndExport) {
  RunResult t = run_nanogpt(dir_, "train " + std::string(kTiny) +
                                      " --max_iters=30 --lr_decay_iters=30 --eval_interval=10 "
                                      "--out_dir=run");
  ASSERT_EQ(t.exit_code, 0) << t.output;
  EXPECT_NE(t.output.find("iter 29: loss"), std::string::npos) << t.output;
  EXPECT_NE(t.output.find("mfu"), std::string::npos);
  EXPECT_TRUE(fs::exists(dir_ + "/run/ckpt/model.safetensors"));
  auto records = read_jsonl(dir_ + "/run/metrics.jsonl");
  ASSERT_FALSE(records.empty());
  bool saw_step = false;
  for (const auto& j : records) {
    if (j.contains("loss")) {
      saw_step = true;
      for (const char* key :
           {"iter", "loss", "lr", "ms", "tokens_per_s", "mfu", "peak_mem_bytes"}) {
        EXPECT_TRUE(j.contains(key)) << key;
      }
    }
  }
  EXPECT_TRUE(saw_step);

  for (const char* kv : {"True", "False"}) {
    RunResult s = run_nanogpt(dir_, std::string("sample --out_dir=run --num_samples=2 "
                                                "--max_new_tokens=50 --start=ROMEO: --kv_cache=") +
                                        kv);
    ASSERT_EQ(s.exit_code, 0) << s.output;
    EXPECT_NE(s.output.find("ROMEO:"), std::string::npos) << s.output;
    EXPECT_NE(s.output.find("sampled 100 tokens"), std::string::npos) << s.output;
  }
  // Greedy decoding with and without the cache gives the same text.
  RunResult g1 = run_nanogpt(dir_,
                             "sample --out_dir=run --num_samples=1 --max_new_tokens=40 "
                             "--temperature=0 --kv_cache=True --start=ROMEO:");
  RunResult g2 = run_nanogpt(dir_,
                             "sample --out_dir=run --num_samples=1 --max_new_tokens=40 "
                             "--temperature=0 --kv_cache=False --start=ROMEO:");
  auto text = [](const std::string& s) { return s.substr(0, s.find("---------------")); };
  EXPECT_EQ(text(g1.output), text(g2.output));
  EXPECT_GT(text(g1.output).size(), 40u);

  RunResult e = run_nanogpt(dir_, "export --out_dir=run --format=llmc --output=run/model.bin");
  ASSERT_EQ(e.exit_code, 0) << e.output;
  RunResult f = run_nanogpt(dir_, "train " + std::string(kTiny) +
                                      " --init_from=run/model.bin --max_iters=2 --eval_interval=1"
                                      " --out_dir=finetune");
  ASSERT_EQ(f.exit_code, 0) << f.output;
}

// The architecture options end to end: a run with every one of them resumes bit-exactly, its
// checkpoint records them (sample and estimate need no keys repeated), greedy sampling is the same
// with and without the KV cache, resuming with another architecture is refused naming the key, and
// both GPT-2 exports refuse the model, naming what they cannot express, leaving the checkpoint.
TEST_F(CliTest, ModernArchitectureResumesSamplesEstimatesAndRefusesGpt2Exports) {
  const std::string modern =
      std::string(kTiny) +
      " --norm=rmsnorm --position=rotary --qk_norm=True --activation=relu2 --tie_embeddings=False"
      " --zero_init_proj=True --logit_softcap=15 --unet_skips=True --dropout=0.1 --eval_interval=5";
  expect_resume_bit_exact(dir_, modern, 12);

  RunResult g1 = run_nanogpt(dir_,
                             "sample --out_dir=straight --num_samples=1 --max_new_tokens=40 "
                             "--temperature=0 --kv_cache=True --start=ROMEO:");
  RunResult g2 = run_nanogpt(dir_,
                             "sample --out_dir=straight --num_samples=1 --max_new_tokens=40 "
                             "--temperature=0 --kv_cache=False --start=ROMEO:");
  ASSERT_EQ(g1.exit_code, 0) << g1.output;
  auto text = [](const std::string& s) { return s.substr(0, s.find("---------------")); };
  EXPECT_EQ(text(g1.output), text(g2.output));
  EXPECT_NE(g1.output.find("ROMEO:"), std::string::npos) << g1.output;

  RunResult est = run_nanogpt(dir_, "estimate " + modern + " --measure_peak=False");
  ASSERT_EQ(est.exit_code, 0) << est.output;

  RunResult other = run_nanogpt(dir_, "train " + modern +
                                          " --norm=layernorm --max_iters=14 --out_dir=straight "
                                          "--init_from=resume");
  EXPECT_NE(other.exit_code, 0);
  EXPECT_NE(other.output.find("norm = \"rmsnorm\" (checkpoint) vs \"layernorm\""), std::string::npos)
      << other.output;

  for (const char* format : {"llmc", "hf"}) {
    RunResult e = run_nanogpt(dir_, std::string("export --out_dir=straight --format=") + format +
                                        " --output=straight/exported");
    EXPECT_NE(e.exit_code, 0) << format;
    EXPECT_NE(e.output.find("position = 'rotary'"), std::string::npos) << e.output;
    EXPECT_NE(e.output.find("logit_softcap > 0"), std::string::npos) << e.output;
    EXPECT_NE(e.output.find("unet_skips = True"), std::string::npos) << e.output;
    EXPECT_FALSE(fs::exists(dir_ + "/straight/exported")) << format;
  }
  EXPECT_TRUE(fs::exists(dir_ + "/straight/ckpt/model.safetensors"));
}

// A model key end to end: training with `keys` resumes bit-exactly (expect_resume_bit_exact's
// run "straight"), its checkpoint samples with the KV cache with no key repeated, and resuming it
// with `other` (the key at another value) is refused naming `key`.
void expect_key_resumes_samples_and_sticks(const std::string& dir, const std::string& keys,
                                           const std::string& other, const std::string& key) {
  expect_resume_bit_exact(dir, keys, 8);
  RunResult g = run_nanogpt(dir,
                            "sample --out_dir=straight --num_samples=1 --max_new_tokens=20 "
                            "--temperature=0 --kv_cache=True --start=ROMEO:");
  ASSERT_EQ(g.exit_code, 0) << g.output;
  EXPECT_NE(g.output.find("ROMEO:"), std::string::npos) << g.output;
  RunResult r = run_nanogpt(
      dir, "train " + keys + " " + other + " --max_iters=10 --out_dir=straight --init_from=resume");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find(key), std::string::npos) << r.output;
}

// QK-norm's query gain end to end: a run resumes bit-exactly, its checkpoint records the gain
// (sampling with the KV cache needs no key repeated), resuming with another gain is refused naming
// the key, and the gain without QK-norm is an error naming both keys. (KV-cache decoding against
// the full forward: architecture_test.cpp; greedy text is not compared here, as near-ties of an
// untrained model's logits flip with the last bit.)
TEST_F(CliTest, QkNormGainResumesSamplesAndIsRefusedElsewhere) {
  const std::string keys =
      std::string(kTiny) + " --position=rotary --qk_norm=True --qk_norm_gain=2 --eval_interval=5";
  expect_key_resumes_samples_and_sticks(dir_, keys, "--qk_norm_gain=1", "qk_norm_gain");
  RunResult bad = run_nanogpt(
      dir_, "train " + std::string(kTiny) + " --qk_norm_gain=2 --max_iters=2 --out_dir=bad");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("qk_norm_gain = 2 needs qk_norm = True"), std::string::npos)
      << bad.output;
}

// The attention branch's learned gain end to end: a run resumes bit-exactly (with Muon, whose
// AdamW group the gains join), samples with the KV cache from its checkpoint alone, and resuming
// with another attn_gain is refused naming the key; a negative one is an error naming it.
TEST_F(CliTest, AttnGainResumesSamplesAndIsRefusedElsewhere) {
  const std::string keys =
      std::string(kTiny) + " --attn_gain=0.5 --optimizer=muon --eval_interval=5";
  expect_key_resumes_samples_and_sticks(dir_, keys, "--attn_gain=0", "attn_gain");
  RunResult bad = run_nanogpt(
      dir_, "train " + std::string(kTiny) + " --attn_gain=-1 --max_iters=2 --out_dir=bad");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("attn_gain = -1: expected >= 0"), std::string::npos) << bad.output;
}

TEST_F(CliTest, NonFiniteLossStopsAndKeepsTheLastCheckpoint) {
  e2e::expect_non_finite_stop_keeps_checkpoint(
      dir_, std::string(kTiny) + " --eval_interval=4 --out_dir=blowup",
      {"learning_rate", "last good checkpoint"});
}

TEST_F(CliTest, ProfilePrintsWhereStepTimeGoes) {
  RunResult r = run_nanogpt(dir_, "train " + std::string(kTiny) +
                                      " --max_iters=3 --lr_decay_iters=3 --eval_interval=10 "
                                      "--dropout=0.1 --profile=True --out_dir=prof");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const size_t at = r.output.find("profile over 3 steps");
  ASSERT_NE(at, std::string::npos) << r.output;
  const std::string table = r.output.substr(at);
  for (const char* row : {"\nmatmul ", "\nattention ", "\nnorm ", "\nelementwise ", "\nclassifier ",
                          "\noptimizer ", "\ndata ", "\nother "}) {
    EXPECT_NE(table.find(row), std::string::npos) << row << "\n" << table;
  }
  EXPECT_NE(table.find("GFLOP/s"), std::string::npos) << table;
}

TEST_F(CliTest, ResumeRejectsMismatchesAndMissingCheckpoint) {
  RunResult r = run_nanogpt(
      dir_, "train " + std::string(kTiny) + " --init_from=resume --out_dir=never_trained");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("never_trained"), std::string::npos) << r.output;

  RunResult t = run_nanogpt(
      dir_, "train " + std::string(kTiny) + " --max_iters=2 --eval_interval=2 --out_dir=run");
  ASSERT_EQ(t.exit_code, 0) << t.output;
  r = run_nanogpt(dir_, "train " + std::string(kTiny) +
                            " --n_layer=3 --max_iters=4 --init_from=resume --out_dir=run");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("n_layer = 2 (checkpoint) vs 3 (config)"), std::string::npos) << r.output;
  r = run_nanogpt(dir_, "train " + std::string(kTiny) +
                            " --optimizer=sgd --max_iters=4 --init_from=resume --out_dir=run");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("--optimizer=adamw"), std::string::npos) << r.output;
  // The checkpoint is intact after the refused resumes: a correct resume continues.
  r = run_nanogpt(dir_, "train " + std::string(kTiny) +
                            " --max_iters=4 --eval_interval=2 --init_from=resume --out_dir=run");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("resumed from run/ckpt at iteration 2"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace nanogpt::e2e
