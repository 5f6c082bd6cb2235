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

// The line of `estimate`'s memory table that starts with `what` (after the indent), or "".
std::string memory_line(const std::string& out, const std::string& what) {
  const size_t p = out.find("\n  " + what);
  if (p == std::string::npos) return "";
  return out.substr(p + 1, out.find('\n', p + 1) - p - 1);
}

// `estimate --device=cuda`: the one model's memory (the trainer's allocation functions, as on the
// CPU) resolved as train --device=cuda resolves the run, plus the CUDA backend's own buffers.
TEST_F(DeviceCli, EstimateGivesTheGpuMemoryOnAnyMachine) {
  const std::string config = std::string(NANOGPT_SOURCE_DIR) + "/config/train_gpt2.py";
  RunResult r =
      run_nanogpt(dir_, "estimate " + config +
                            " --device=cuda --batch_size=16 --gradient_accumulation_steps=1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("GPU (--device=cuda), bfloat16, flash attention:"), std::string::npos)
      << r.output;
  ModelConfig gpt2;
  gpt2.vocab_size = 50257;
  gpt2.validate();
  const int64_t P = ParamTable(gpt2).total_numel();
  EXPECT_NE(memory_line(r.output, "optimizer state (adamw: 2 x params)").find(format_bytes(8 * P)),
            std::string::npos)
      << r.output;
  EXPECT_NE(memory_line(r.output, "weights copy (bfloat16)").find(format_bytes(2 * P)),
            std::string::npos)
      << r.output;
  // The largest op temporary: the MLP projection's input gradient, 16 x 1024 x 3072 bfloat16.
  EXPECT_NE(memory_line(r.output, "CUDA backend's largest op temporary")
                .find(format_bytes(int64_t{16} * 1024 * 3072 * 2)),
            std::string::npos)
      << r.output;
  RunResult naive =
      run_nanogpt(dir_, "estimate " + config + " --device=cuda --batch_size=16 --attention=naive");
  ASSERT_EQ(naive.exit_code, 0) << naive.output;
  EXPECT_NE(naive.output.find("naive (T x T probabilities)"), std::string::npos) << naive.output;
  // float32 on the GPU keeps the T x T probabilities, as train --device=cuda runs it.
  RunResult f32 =
      run_nanogpt(dir_, "estimate " + config + " --device=cuda --batch_size=4 --dtype=float32");
  ASSERT_EQ(f32.exit_code, 0) << f32.output;
  EXPECT_NE(f32.output.find("GPU (--device=cuda), float32, naive (T x T probabilities) attention:"),
            std::string::npos)
      << f32.output;
  EXPECT_NE(f32.output.find("attention probabilities"), std::string::npos) << f32.output;
}

// Per GPU of 8: the trainer's per-rank memory. GPT-2 124M of config/train_gpt2.py (bias = False)
// by hand: wte 50304 x 768 (the padded vocabulary), wpe 1024 x 768, 12 blocks of 12 C^2 + 2 C (the
// matrices and two LayerNorm weights), ln_f C: P = 124,373,760; a shard is P / 8 = 15,546,720.
TEST_F(DeviceCli, EstimatePerGpuOfEightGivesEachRanksShare) {
  const int64_t C = 768, P = 50304 * C + 1024 * C + 12 * (12 * C * C + 2 * C) + C;
  ASSERT_EQ(P, 124'373'760);
  const int64_t shard = P / 8;
  const std::string config = std::string(NANOGPT_SOURCE_DIR) + "/config/train_gpt2.py";
  RunResult d = run_nanogpt(
      dir_, "estimate " + config + " --device=cuda --batch_size=12 --world_size=8 --zero_stage=0");
  ASSERT_EQ(d.exit_code, 0) << d.output;
  EXPECT_NE(d.output.find("flash attention, per GPU of 8:"), std::string::npos) << d.output;
  EXPECT_NE(d.output.find("world size 8 (5 micro-batches per rank)"), std::string::npos)
      << d.output;
  EXPECT_NE(memory_line(d.output, "optimizer state (adamw: 2 x params)").find(format_bytes(8 * P)),
            std::string::npos)
      << d.output;
  // ZeRO-1: each GPU holds its shard of the optimizer state.
  RunResult z = run_nanogpt(
      dir_, "estimate " + config + " --device=cuda --batch_size=12 --world_size=8 --zero_stage=1");
  ASSERT_EQ(z.exit_code, 0) << z.output;
  EXPECT_NE(z.output.find("flash attention, per GPU of 8, ZeRO-1:"), std::string::npos)
      << z.output;
  EXPECT_NE(memory_line(z.output, "optimizer state (adamw: 2 x shard of 8)")
                .find(format_bytes(8 * shard)),
            std::string::npos)
      << z.output;
  RunResult bad = run_nanogpt(dir_, "estimate " + config + " --device=cuda --world_size=0");
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  EXPECT_NE(bad.output.find("world_size expects the number of ranks"), std::string::npos)
      << bad.output;
}

}  // namespace
}  // namespace nanogpt::e2e
