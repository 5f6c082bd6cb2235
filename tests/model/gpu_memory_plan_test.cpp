// The GPU model's memory plan (model/gpu_memory_plan.h): its parts add up, activations grow with
// the batch and weights do not, flash attention drops the T x T probabilities, and GPT-2 124M at
// B 16, T 1024 in bfloat16 lands where the H200 measured it (17.9 GiB in use, 2026-11-27).
#include "model/gpu_memory_plan.h"

#include <gtest/gtest.h>

#include "model/params.h"

namespace nanogpt {
namespace {

ModelConfig gpt2() {
  ModelConfig c;
  c.vocab_size = 50257;
  c.validate();
  return c;
}

TEST(GpuMemoryPlan, PartsAddUpAndActivationsGrowWithTheBatch) {
  const ModelConfig c = gpt2();
  const GpuMemoryPlan a = plan_gpu_memory(c, DType::kBF16, 16, 1024);
  const GpuMemoryPlan b = plan_gpu_memory(c, DType::kBF16, 32, 1024);
  EXPECT_EQ(a.total(), a.params + a.grads + a.optimizer + a.activations + a.classifier + a.scratch);
  EXPECT_EQ(a.params, b.params);
  EXPECT_GT(b.activations, a.activations);
  const int64_t P = ParamTable(c).total_numel();
  EXPECT_EQ(a.params, 6 * P);  // float32 masters and the bfloat16 copy
  EXPECT_EQ(a.grads, 4 * P);
  EXPECT_EQ(a.optimizer, 8 * P);
  EXPECT_EQ(plan_gpu_memory(c, DType::kF32, 16, 1024).params, 4 * P);
}

TEST(GpuMemoryPlan, FlashAttentionKeepsNoTByTMatrix) {
  const ModelConfig c = gpt2();  // head size 64
  const GpuMemoryPlan flash = plan_gpu_memory(c, DType::kBF16, 16, 1024);
  const GpuMemoryPlan naive = plan_gpu_memory(c, DType::kBF16, 16, 1024, /*naive=*/true);
  EXPECT_TRUE(flash.flash_attention);
  EXPECT_FALSE(naive.flash_attention);
  // 12 layers x 16 x 12 heads x 1024 x 1024 bf16 probabilities, less the statistics kept instead.
  EXPECT_EQ(naive.activations - flash.activations,
            12 * (int64_t{16} * 12 * 1024 * 1024 * 2 - int64_t{16} * 12 * 1024 * 4));
  EXPECT_FALSE(plan_gpu_memory(c, DType::kF32, 16, 1024).flash_attention);  // float32: naive
}

TEST(GpuMemoryPlan, Gpt2NaiveMatchesWhatTheH200Held) {
  // The naive attention's run on an H200 held 17.90 GiB (cudaMemGetInfo, with the CUDA context)
  // when the classifier kept float32 logits beside their bfloat16 gradient; the plan said 17.57
  // GiB. The logits are now bfloat16, overwritten by their gradient: N x Vp x 4 bytes (3.07 GiB)
  // fewer.
  const GpuMemoryPlan p = plan_gpu_memory(gpt2(), DType::kBF16, 16, 1024, /*naive=*/true);
  const double gib = static_cast<double>(p.total()) / (1 << 30);
  EXPECT_NEAR(gib, 17.57 - 16384.0 * 50304 * 4 / (1 << 30), 0.01);
  // float32 keeps both: logits and gradient.
  const GpuMemoryPlan f = plan_gpu_memory(gpt2(), DType::kF32, 16, 1024);
  EXPECT_EQ(f.classifier, int64_t{16384} * 50304 * 8);
}

}  // namespace
}  // namespace nanogpt
