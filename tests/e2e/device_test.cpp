// --device: 'cuda' trains on the GPU (also on from nanoGPT's ckpt.pt) and its checkpoint resumes
// on the CPU, or, where it cannot run (a build without the CUDA backend, a machine without a GPU),
// it says which and how to go on; an unknown device is refused by name.
#include <gtest/gtest.h>

#include <string>

#include "e2e_util.h"
#include "model/params.h"
#include "train/metrics.h"

namespace nanogpt::e2e {
namespace {

class DeviceCli : public ShakespeareTest {};

constexpr const char* kTiny =
    " --data_dir=data/sc --n_layer=2 --n_head=2 --n_embd=64 --block_size=32 --batch_size=4"
    " --max_iters=4 --eval_interval=2 --eval_iters=2 --log_interval=1 --dtype=float32"
    " --warmup_iters=0 --learning_rate=1e-3";

TEST_F(DeviceCli, CudaTrainsAndResumesOnTheCpuOrSaysWhyNot) {
  RunResult gpu = run_nanogpt(dir_, std::string("train --device=cuda --out_dir=out") + kTiny);
  if (gpu.exit_code == 0) {
    // A GPU ran it: the checkpoint is the CPU's format, and the CPU continues the run.
    EXPECT_NE(gpu.output.find("saved checkpoint"), std::string::npos) << gpu.output;
    RunResult cpu = run_nanogpt(dir_, std::string("train --device=cpu --out_dir=out "
                                                  "--init_from=resume") +
                                          kTiny + " --max_iters=6");
    ASSERT_EQ(cpu.exit_code, 0) << cpu.output;
    EXPECT_NE(cpu.output.find("resumed from"), std::string::npos) << cpu.output;
    EXPECT_NE(cpu.output.find("iter 5:"), std::string::npos) << cpu.output;
    return;
  }
  EXPECT_EQ(gpu.exit_code, 1) << gpu.output;
  const bool no_backend = gpu.output.find("built without the CUDA backend") != std::string::npos;
  const bool no_device = gpu.output.find("no usable CUDA device") != std::string::npos;
  EXPECT_TRUE(no_backend || no_device) << gpu.output;
  EXPECT_NE(gpu.output.find("--device=cpu"), std::string::npos) << gpu.output;
  // Nothing was trained, so nothing was saved.
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/out/ckpt/state.json"));
}

TEST_F(DeviceCli, CudaContinuesANanoGptCheckpointOrSaysWhyNot) {
  const std::string fixture =
      std::string(NANOGPT_SOURCE_DIR) + "/tests/fixtures/nanogpt/nanogpt_bias.pt";
  RunResult r = run_nanogpt(dir_, "train --device=cuda --dtype=float32 --init_from=" + fixture +
                                      " --dataset=sc --batch_size=4 --max_iters=6 "
                                      "--eval_interval=3 --eval_iters=2 --out_dir=nano");
  if (r.exit_code == 0) {
    EXPECT_NE(r.output.find("continuing nanoGPT's run"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("AdamW's moments (step 3) taken"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("iter 5:"), std::string::npos) << r.output;
    return;
  }
  EXPECT_NE(r.output.find("--device=cpu"), std::string::npos) << r.output;
}

TEST_F(DeviceCli, AnUnknownDeviceIsRefusedByName) {
  RunResult r = run_nanogpt(dir_, std::string("train --device=mps --out_dir=out") + kTiny);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("device = 'mps'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("'cpu' or 'cuda'"), std::string::npos) << r.output;
}

TEST_F(DeviceCli, EstimateGivesTheGpuMemoryOnAnyMachine) {
  const std::string config = std::string(NANOGPT_SOURCE_DIR) + "/config/train_gpt2.py";
  RunResult r =
      run_nanogpt(dir_, "estimate " + config +
                            " --device=cuda --batch_size=16 --gradient_accumulation_steps=1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("GPU (--device=cuda), bfloat16, micro-batch 16 x 1024, flash attention"),
            std::string::npos)
      << r.output;
  ModelConfig gpt2;
  gpt2.vocab_size = 50257;
  gpt2.validate();
  const std::string adam = format_bytes(8 * ParamTable(gpt2).total_numel());  // m and v, float32
  EXPECT_NE(r.output.find("AdamW m, v       " + adam), std::string::npos) << r.output;
  RunResult naive =
      run_nanogpt(dir_, "estimate " + config + " --device=cuda --batch_size=16 --attention=naive");
  ASSERT_EQ(naive.exit_code, 0) << naive.output;
  EXPECT_NE(naive.output.find("naive (T x T probabilities)"), std::string::npos) << naive.output;
}

// Per GPU of 8: ZeRO-1 divides AdamW's m and v and the float32 masters by 8; the bfloat16 copy and
// the gradients stay whole. GPT-2 124M of config/train_gpt2.py (bias = False) by hand: wte
// 50304 x 768 (the padded vocabulary), wpe 1024 x 768, 12 blocks of 12 C^2 + 2 C (the matrices and
// two LayerNorm weights), ln_f C: P = 124,373,760; a shard is P / 8 = 15,546,720 (a multiple of
// 16, so no padding).
TEST_F(DeviceCli, EstimatePerGpuOfEightWithZeroOneShardsTheOptimizerAndTheMasters) {
  const int64_t C = 768, P = 50304 * C + 1024 * C + 12 * (12 * C * C + 2 * C) + C;
  ASSERT_EQ(P, 124'373'760);
  ModelConfig gpt2;
  gpt2.vocab_size = 50257;
  gpt2.validate();
  ASSERT_EQ(ParamTable(gpt2).total_numel(), P);
  const int64_t shard = P / 8;
  ASSERT_EQ(shard, 15'546'720);
  const std::string config = std::string(NANOGPT_SOURCE_DIR) + "/config/train_gpt2.py";
  RunResult z = run_nanogpt(dir_, "estimate " + config +
                                      " --device=cuda --batch_size=12 --world_size=8 --zero_stage=1");
  ASSERT_EQ(z.exit_code, 0) << z.output;
  EXPECT_NE(z.output.find("flash attention, per GPU of 8 (ZeRO-1):"), std::string::npos)
      << z.output;
  // m and v: 8 bytes per element of the shard (124,373,760 bytes, an eighth of 8 P).
  EXPECT_NE(z.output.find("AdamW m, v       " + format_bytes(8 * shard) + " (ZeRO-1: shard of 8)"),
            std::string::npos)
      << z.output;
  // float32 masters of the shard (62,186,880) + the whole bfloat16 copy (248,747,520).
  EXPECT_NE(z.output.find("weights          " + format_bytes(310'934'400)), std::string::npos)
      << z.output;
  EXPECT_NE(z.output.find("gradients        " + format_bytes(497'495'040) + " (whole on every GPU)"),
            std::string::npos)
      << z.output;
  // Without ZeRO-1 every GPU holds all of it: 8 P of AdamW state, 6 P of weights.
  RunResult d = run_nanogpt(dir_, "estimate " + config +
                                      " --device=cuda --batch_size=12 --world_size=8 --zero_stage=0");
  ASSERT_EQ(d.exit_code, 0) << d.output;
  EXPECT_NE(d.output.find("per GPU of 8 (data parallel, every GPU whole)"), std::string::npos)
      << d.output;
  EXPECT_NE(d.output.find("AdamW m, v       " + format_bytes(994'990'080) + "\n"),
            std::string::npos)
      << d.output;
  EXPECT_NE(d.output.find("weights          " + format_bytes(746'242'560)), std::string::npos)
      << d.output;
  // float32 training: the model's float32 weights are the masters and stay whole.
  RunResult f = run_nanogpt(dir_, "estimate " + config +
                                      " --device=cuda --dtype=float32 --batch_size=4"
                                      " --world_size=8 --zero_stage=1");
  ASSERT_EQ(f.exit_code, 0) << f.output;
  EXPECT_NE(f.output.find("weights          " + format_bytes(4 * P) + " (float32)"),
            std::string::npos)
      << f.output;
  EXPECT_NE(f.output.find("AdamW m, v       " + format_bytes(8 * shard)), std::string::npos)
      << f.output;
  RunResult bad = run_nanogpt(dir_, "estimate " + config + " --device=cuda --world_size=0");
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  EXPECT_NE(bad.output.find("world_size expects the number of ranks"), std::string::npos)
      << bad.output;
}

}  // namespace
}  // namespace nanogpt::e2e
