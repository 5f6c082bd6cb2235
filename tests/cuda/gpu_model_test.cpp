// The GPU model (gpu/gpu_model.h) against the CPU model (model/gpt.h) from the same weights, batch
// and dropout seed: loss, every parameter's gradient, and an AdamW step, in float32 (no TF32: the
// same arithmetic up to summation order) and bfloat16; and what runs without a GPU: the memory
// plan, the peak table and the trainer's refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/rng.h"
#include "cuda_test_util.h"
#include "gpu/gpu_model.h"
#include "gpu/gpu_peak.h"
#include "gpu/gpu_trainer.h"
#include "kernels/context.h"
#include "model/gpt.h"
#include "model/init.h"
#include "optim/adamw.h"

namespace nanogpt {
namespace {

ModelConfig small_config(double dropout, const std::string& norm = "layernorm",
                         const std::string& activation = "gelu", bool tied = true) {
  ModelConfig c;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 64;
  c.block_size = 32;
  c.vocab_size = 67;  // padded to 128: the padded logits must get no gradient
  c.bias = true;
  c.dropout = dropout;
  c.norm = norm;
  c.activation = activation;
  c.tie_embeddings = tied;
  c.validate();
  return c;
}

// Relative L2 error of a against b.
double rel_error(const float* a, const float* b, int64_t n) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(a[i]) - b[i];
    num += d * d;
    den += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

struct Case {
  const char* name;
  DType dtype;
  double dropout;
  const char* norm;
  const char* activation;
  bool tied;
};

class GpuModelTest : public cuda::testing_cuda::CudaTestWithParam<Case> {};

TEST_P(GpuModelTest, LossGradientsAndAdamWMatchTheCpuModel) {
  const Case& k = GetParam();
  const ModelConfig config = small_config(k.dropout, k.norm, k.activation, k.tied);
  const int B = 3, T = 29;  // T below block_size, rows not a multiple of 32
  const int64_t N = int64_t{B} * T;
  std::vector<int> inputs(N), targets(N);
  Rng rng(7);
  for (int64_t i = 0; i < N; ++i) {
    inputs[i] = static_cast<int>(rng.uniform_int(config.vocab_size));
    targets[i] = i % 17 == 5 ? -1 : static_cast<int>(rng.uniform_int(config.vocab_size));
  }
  const uint64_t seed = 1234;
  const float grad_scale = 0.5f;

  KernelContext kctx;
  GPT cpu(config);
  cpu.set_dtype(k.dtype);
  cpu.init_weights(11);
  // Larger biases and gains than the init's so that every term is exercised.
  const ParamTable& table = cpu.table();
  std::vector<float> params(cpu.params().begin(), cpu.params().end());
  for (const ParamSpec& s : table.specs()) {
    if (s.shape.size() == 1) {
      for (int64_t i = 0; i < s.numel; ++i) params[s.offset + i] += 0.1f * rng.normal();
    }
  }
  std::copy(params.begin(), params.end(), cpu.params().begin());
  cpu.zero_grad();
  const float cpu_loss =
      cpu.forward(kctx, inputs.data(), targets.data(), B, T, true, seed, grad_scale);
  cpu.backward(kctx);

  cuda::CudaContext ctx(/*allow_tf32=*/false);
  GpuGpt gpu(ctx, config, k.dtype, B, T);
  gpu.upload_params(params.data());
  gpu.zero_grad();
  const float gpu_loss = gpu.forward(inputs.data(), targets.data(), B, T, true, seed, grad_scale);
  gpu.backward();
  ctx.synchronize("the test");

  const bool f32 = k.dtype == DType::kF32;
  EXPECT_NEAR(gpu_loss, cpu_loss, f32 ? 1e-5 * std::abs(cpu_loss) : 2e-2 * std::abs(cpu_loss));
  // Every parameter's gradient, tensor by tensor.
  std::vector<float> grads(table.total_numel());
  gpu.download_grads(grads.data());
  for (const ParamSpec& s : table.specs()) {
    const double err = rel_error(grads.data() + s.offset, cpu.grads().data() + s.offset, s.numel);
    EXPECT_LT(err, f32 ? 1e-4 : 5e-2) << s.name;
  }
  double cpu_norm = 0;
  for (float g : cpu.grads()) cpu_norm += double(g) * g;
  cpu_norm = std::sqrt(cpu_norm);
  EXPECT_NEAR(gpu.grad_norm(), cpu_norm, (f32 ? 1e-4 : 3e-2) * cpu_norm);
  if (!f32) return;  // the AdamW arithmetic is checked once, in float32

  // One AdamW step on both (lr large enough that a wrong gradient moves the weights visibly).
  AdamW cpu_opt(table, 0.9, 0.95, 0.1, 1e-8);
  cpu_opt.step(cpu.params().data(), cpu.grads().data(), 1e-2);
  gpu.adamw_step(1e-2, 0.9, 0.95, 1e-8, 0.1, 1.0f, 1);
  std::vector<float> after(table.total_numel());
  gpu.download_params(after.data());
  for (const ParamSpec& s : table.specs()) {
    // The moves (about lr * sign(g) on a first step, plus the decay).
    std::vector<float> gpu_move(s.numel), cpu_move(s.numel);
    for (int64_t i = 0; i < s.numel; ++i) {
      gpu_move[i] = after[s.offset + i] - params[s.offset + i];
      cpu_move[i] = cpu.params()[s.offset + i] - params[s.offset + i];
    }
    const double err = rel_error(gpu_move.data(), cpu_move.data(), s.numel);
    EXPECT_LT(err, 1e-3) << s.name;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, GpuModelTest,
    ::testing::Values(Case{"f32", DType::kF32, 0.0, "layernorm", "gelu", true},
                      Case{"f32_dropout", DType::kF32, 0.1, "layernorm", "gelu", true},
                      Case{"f32_rms_relu2_untied", DType::kF32, 0.0, "rmsnorm", "relu2", false},
                      Case{"bf16", DType::kBF16, 0.0, "layernorm", "gelu", true},
                      Case{"bf16_dropout", DType::kBF16, 0.1, "layernorm", "gelu", true}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(GpuModelHost, MemoryPlanAddsUpAndGrowsWithTheBatch) {
  ModelConfig c;
  c.vocab_size = 50257;
  c.validate();
  const GpuMemoryPlan a = plan_gpu_memory(c, DType::kBF16, 16, 1024);
  const GpuMemoryPlan b = plan_gpu_memory(c, DType::kBF16, 32, 1024);
  EXPECT_EQ(a.total(), a.params + a.grads + a.optimizer + a.activations + a.classifier + a.scratch);
  EXPECT_EQ(a.params, b.params);
  EXPECT_GT(b.activations, a.activations);
  const int64_t P = ParamTable(c).total_numel();
  EXPECT_EQ(a.params, 6 * P);  // float32 masters and the bfloat16 copy
  EXPECT_EQ(plan_gpu_memory(c, DType::kF32, 16, 1024).params, 4 * P);
  // GPT-2 124M at B 16, T 1024 in bf16 fits an 80 GB GPU with room (and not a 12 GB one).
  EXPECT_LT(a.total(), int64_t{40} << 30);
  EXPECT_GT(a.total(), int64_t{12} << 30);
}

TEST(GpuModelHost, DatasheetPeaksByName) {
  EXPECT_DOUBLE_EQ(datasheet_peak_flops("NVIDIA H200", DType::kBF16), 989.4e12);
  EXPECT_DOUBLE_EQ(datasheet_peak_flops("NVIDIA H100 80GB HBM3", DType::kBF16), 989.4e12);
  EXPECT_DOUBLE_EQ(datasheet_peak_flops("NVIDIA H100 PCIe", DType::kBF16), 756e12);
  EXPECT_DOUBLE_EQ(datasheet_peak_flops("NVIDIA A100-SXM4-80GB", DType::kF32), 156e12);
  EXPECT_EQ(datasheet_peak_flops("NVIDIA GeForce RTX 4090", DType::kBF16), 0);  // measured then
}

TEST(GpuModelHost, RefusesWhatTheGpuDoesNotRunByName) {
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  ModelConfig rotary = small_config(0);
  rotary.position = "rotary";
  EXPECT_NE(message([&] { require_gpu_architecture(rotary); }).find("position = 'rotary'"),
            std::string::npos);
  TrainConfig t;
  t.model = small_config(0);
  t.optim.optimizer = "muon";
  EXPECT_NE(message([&] { check_gpu_training_config(t); }).find("optimizer = 'muon'"),
            std::string::npos);
  t.optim.optimizer = "adamw";
  t.dtype = "float16";
  EXPECT_NE(message([&] { check_gpu_training_config(t); }).find("--dtype=bfloat16"),
            std::string::npos);
  t.dtype = "bfloat16";
  EXPECT_EQ(message([&] { check_gpu_training_config(t); }), "no error");
}

}  // namespace
}  // namespace nanogpt
