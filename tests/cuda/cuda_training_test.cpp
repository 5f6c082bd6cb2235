// What `train --device=cuda` decides without a GPU: the datasheet peaks its MFU is taken against
// (gpu/gpu_peak.h), and the refusals of check_cuda_training_config (gpu/cuda_training.h), each
// naming the GPU or the head size, and the fix. (The one trainer on a GPU: tests/backends.)
#include "gpu/cuda_training.h"

#include <gtest/gtest.h>

#include <string>

#include "core/check.h"
#include "gpu/gpu_peak.h"

namespace nanogpt {
namespace {

TEST(CudaTraining, DatasheetPeaksByName) {
  EXPECT_DOUBLE_EQ(datasheet_peak_flops("NVIDIA H200", DType::kBF16), 989.4e12);
  EXPECT_DOUBLE_EQ(datasheet_peak_flops("NVIDIA H100 80GB HBM3", DType::kBF16), 989.4e12);
  EXPECT_DOUBLE_EQ(datasheet_peak_flops("NVIDIA H100 PCIe", DType::kBF16), 756e12);
  EXPECT_DOUBLE_EQ(datasheet_peak_flops("NVIDIA A100-SXM4-80GB", DType::kF32), 156e12);
  EXPECT_EQ(datasheet_peak_flops("NVIDIA GeForce RTX 4090", DType::kBF16), 0);  // measured then
}

std::string refusal(const TrainConfig& t, const std::string& gpu, int cc) {
  try {
    check_cuda_training_config(t, gpu, cc);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

// float16 runs on every GPU the kernels take (sm_75 on); bfloat16 from sm_80 on. An older GPU is
// refused by its name, with the CPU (float16 and the loss scaler) as the fix, and bfloat16 on a
// Turing GPU with float16 as the fix.
TEST(CudaTraining, Float16RunsFromTuringOnAndBfloat16FromAmpereOn) {
  TrainConfig t;
  t.dtype = "float16";
  EXPECT_EQ(refusal(t, "NVIDIA H200", 90), "no error");
  EXPECT_EQ(refusal(t, "Tesla T4", 75), "no error");
  EXPECT_EQ(refusal(t, "", 0), "no error");  // checked again once a GPU is found
  const std::string v100 = refusal(t, "Tesla V100-SXM2-16GB", 70);
  EXPECT_NE(v100.find("Tesla V100-SXM2-16GB (sm_70)"), std::string::npos) << v100;
  EXPECT_NE(v100.find("--device=cpu (float16 runs there too, with the loss scaler)"),
            std::string::npos)
      << v100;
  t.dtype = "bfloat16";
  const std::string t4 = refusal(t, "Tesla T4", 75);
  EXPECT_NE(t4.find("Tesla T4 (sm_75) has no bfloat16 tensor cores"), std::string::npos) << t4;
  EXPECT_NE(t4.find("--dtype=float16"), std::string::npos) << t4;
  EXPECT_EQ(refusal(t, "NVIDIA A100-SXM4-80GB", 80), "no error");
  t.dtype = "float32";
  EXPECT_EQ(refusal(t, "Tesla T4", 75), "no error");
  // 'auto': bfloat16 where the GPU has it (or none is known yet), else float16.
  EXPECT_EQ(cuda_auto_dtype(90), "bfloat16");
  EXPECT_EQ(cuda_auto_dtype(80), "bfloat16");
  EXPECT_EQ(cuda_auto_dtype(0), "bfloat16");
  EXPECT_EQ(cuda_auto_dtype(75), "float16");
  t.dtype = "auto";
  EXPECT_EQ(refusal(t, "Tesla T4", 75), "no error");
}

TEST(CudaTraining, RefusesGpusOlderThanTheKernelsAndHeadsOver256) {
  TrainConfig t;
  t.dtype = "bfloat16";
  EXPECT_EQ(refusal(t, "NVIDIA H200", 90), "no error");
  EXPECT_EQ(refusal(t, "", 0), "no error");
  const std::string old_gpu = refusal(t, "Tesla P100-PCIE-16GB", 60);
  EXPECT_NE(old_gpu.find("Tesla P100-PCIE-16GB (sm_60)"), std::string::npos) << old_gpu;
  EXPECT_NE(old_gpu.find("--device=cpu"), std::string::npos) << old_gpu;
  // bfloat16 attention on the GPU: heads of at most 256 (float32: the T x T way, any head).
  t.model.n_embd = 128;
  t.model.n_head = 4;
  EXPECT_EQ(refusal(t, "NVIDIA H200", 90), "no error");  // the CPU speedrun recipe's heads of 32
  t.model.n_embd = 1024;
  t.model.n_head = 2;
  const std::string hs512 = refusal(t, "NVIDIA H200", 90);
  EXPECT_NE(hs512.find("at most 256 (here n_embd 1024 / n_head 2 = 512)"), std::string::npos)
      << hs512;
  t.dtype = "float32";
  EXPECT_EQ(refusal(t, "NVIDIA H200", 90), "no error");
  t.dtype = "bfloat16";
  t.model.n_embd = 768;
  t.model.n_head = 12;
  // Every other key runs on the GPU through the one trainer: none is refused.
  t.zero_stage = 1;
  t.optim.optimizer = "muon";
  t.target_loss = 1.5;
  t.optim.head_learning_rate = 1e-3;
  t.model.qk_norm_gain = 2;
  t.model.unet_skips = true;
  t.model.attn_gain = 0.5;
  t.context_warmup_iters = 100;
  t.ema_decay = 0.9;
  t.profile = true;
  EXPECT_EQ(refusal(t, "NVIDIA H200", 90), "no error");
}

}  // namespace
}  // namespace nanogpt
