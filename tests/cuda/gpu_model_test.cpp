// The GPU model (gpu/gpu_model.h) against the CPU model (model/gpt.h) from the same weights, batch
// and dropout seed: loss, every parameter's gradient, and an AdamW step, in float32 (no TF32: the
// same arithmetic up to summation order) and bfloat16; and what runs without a GPU: the memory
// plan, the peak table and the trainer's refusals.
#include "gpu/gpu_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/rng.h"
#include "cuda_test_util.h"
#include "gpu/gpu_peak.h"
#include "gpu/gpu_trainer.h"
#include "kernels/cpu_backend.h"
#include "model/gpt.h"
#include "model/init.h"
#include "model/kv_cache.h"
#include "optim/adamw.h"

namespace nanogpt {
namespace {

ModelConfig small_config(double dropout, const std::string& norm = "layernorm",
                         const std::string& activation = "gelu", bool tied = true, int C = 64,
                         bool modern = false) {
  ModelConfig c;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = C;  // head size C / 2: 64 (C 128) runs flash attention in bfloat16
  c.block_size = 32;
  c.vocab_size = 67;  // padded to 128: the padded logits must get no gradient
  c.bias = true;
  c.dropout = dropout;
  c.norm = norm;
  c.activation = activation;
  c.tie_embeddings = tied;
  if (modern) {  // rotary positions, QK-norm, the logit soft-cap
    c.position = "rotary";
    c.qk_norm = true;
    c.logit_softcap = 15.0;
  }
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
  int C = 64;
  bool naive = false;
  bool modern = false;
  bool mma = false;  // flash attention on the mma.sync kernels
};

class GpuModelTest : public cuda::testing_cuda::CudaTestWithParam<Case> {};

TEST_P(GpuModelTest, LossGradientsAndAdamWMatchTheCpuModel) {
  const Case& k = GetParam();
  const ModelConfig config = small_config(k.dropout, k.norm, k.activation, k.tied, k.C, k.modern);
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

  CpuBackend kctx;
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
  GpuGpt gpu(ctx, config, k.dtype, B, T, k.naive,
             k.mma ? GpuFlashKernel::kMma : GpuFlashKernel::kWmma);
  EXPECT_EQ(gpu.flash_attention(), k.dtype == DType::kBF16 && k.C == 128 && !k.naive);
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
                      Case{"bf16_dropout", DType::kBF16, 0.1, "layernorm", "gelu", true},
                      Case{"bf16_flash", DType::kBF16, 0.0, "layernorm", "gelu", true, 128},
                      Case{"bf16_flash_dropout", DType::kBF16, 0.1, "layernorm", "gelu", true, 128},
                      Case{"bf16_naive_hs64_dropout", DType::kBF16, 0.1, "layernorm", "gelu", true,
                           128, true},
                      Case{"f32_rotary_qknorm_softcap", DType::kF32, 0.0, "rmsnorm", "relu2", true,
                           64, false, true},
                      Case{"bf16_flash_rotary_qknorm_softcap", DType::kBF16, 0.1, "rmsnorm",
                           "relu2", false, 128, false, true},
                      Case{"bf16_flash_mma", DType::kBF16, 0.0, "layernorm", "gelu", true, 128,
                           false, false, true},
                      Case{"bf16_flash_mma_dropout_modern", DType::kBF16, 0.1, "rmsnorm", "relu2",
                           false, 128, false, true, true}),
    [](const auto& info) { return std::string(info.param.name); });

// Sampling with the KV cache: the GPU's forward_one gives the CPU's logits token after token.
class GpuDecodeTest : public cuda::testing_cuda::CudaTestWithParam<Case> {};

TEST_P(GpuDecodeTest, ForwardOneMatchesTheCpuModel) {
  const Case& k = GetParam();
  const ModelConfig config = small_config(0.0, k.norm, k.activation, k.tied, k.C, k.modern);
  CpuBackend kctx;
  GPT cpu(config);
  cpu.init_weights(5);
  std::vector<float> params(cpu.params().begin(), cpu.params().end());
  KvCache cache(config, config.block_size);
  cuda::CudaContext ctx(/*allow_tf32=*/false);
  GpuGpt gpu(ctx, config, k.dtype, 1, 1);
  gpu.upload_params(params.data());
  const int Vp = config.padded_vocab_size();
  std::vector<float> want(Vp), got(Vp);
  const int tokens[] = {3, 17, 0, 66, 41, 9, 9};
  for (int pos = 0; pos < 7; ++pos) {
    cpu.forward_one(kctx, cache, tokens[pos], pos, want.data());
    gpu.forward_one(tokens[pos], pos, got.data());
    EXPECT_LT(rel_error(got.data(), want.data(), config.vocab_size),
              k.dtype == DType::kF32 ? 1e-5 : 3e-2)
        << "position " << pos;
  }
  EXPECT_EQ(gpu.cache_length(), 7);
  gpu.clear_cache();
  EXPECT_EQ(gpu.cache_length(), 0);
}

INSTANTIATE_TEST_SUITE_P(Shapes, GpuDecodeTest,
                         ::testing::Values(Case{"f32", DType::kF32, 0.0, "layernorm", "gelu", true},
                                           Case{"bf16", DType::kBF16, 0.0, "layernorm", "gelu",
                                                true, 128},
                                           Case{"f32_rotary_qknorm_softcap_untied", DType::kF32,
                                                0.0, "rmsnorm", "relu2", false, 64, false, true}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(GpuModelHost, DatasheetPeaksByName) {
  EXPECT_DOUBLE_EQ(datasheet_peak_flops("NVIDIA H200", DType::kBF16), 989.4e12);
  EXPECT_DOUBLE_EQ(datasheet_peak_flops("NVIDIA H100 80GB HBM3", DType::kBF16), 989.4e12);
  EXPECT_DOUBLE_EQ(datasheet_peak_flops("NVIDIA H100 PCIe", DType::kBF16), 756e12);
  EXPECT_DOUBLE_EQ(datasheet_peak_flops("NVIDIA A100-SXM4-80GB", DType::kF32), 156e12);
  EXPECT_EQ(datasheet_peak_flops("NVIDIA GeForce RTX 4090", DType::kBF16), 0);  // measured then
}

TEST(GpuModelHost, RefusesWhatNoTrainerRunsOnTheGpuAndRoutesTheRestByName) {
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  TrainConfig t;
  t.model = small_config(0);
  // No kernel on the GPU yet: refused, naming the key and what to use.
  t.dtype = "float16";
  EXPECT_NE(message([&] { check_gpu_training_config(t); }).find("--dtype=bfloat16"),
            std::string::npos);
  t.dtype = "bfloat16";
  t.zero_stage = 1;
  EXPECT_NE(message([&] { check_gpu_training_config(t); }).find("--zero_stage=0"),
            std::string::npos);
  t.zero_stage = 0;
  EXPECT_EQ(message([&] { check_gpu_training_config(t); }), "no error");
  // What the GPU's own loop does not run goes to the one trainer, named in the log line.
  EXPECT_EQ(gpu_loop_gap(t), "");
  t.optim.optimizer = "muon";
  EXPECT_EQ(gpu_loop_gap(t), "optimizer = 'muon'");
  t.optim.optimizer = "adamw";
  t.context_warmup_iters = 100;
  EXPECT_NE(gpu_loop_gap(t).find("context_warmup_iters"), std::string::npos);
  t.context_warmup_iters = 0;
  t.ema_decay = 0.9;
  EXPECT_NE(gpu_loop_gap(t).find("ema_decay"), std::string::npos);
  t.ema_decay = 0;
  t.optim.head_learning_rate = 1e-3;
  EXPECT_NE(gpu_loop_gap(t).find("head_learning_rate"), std::string::npos);
  t.optim.head_learning_rate = 0;
  t.model.qk_norm_gain = 2;
  EXPECT_NE(gpu_loop_gap(t).find("qk_norm_gain"), std::string::npos);
  t.model.qk_norm_gain = 1;
  t.model.unet_skips = true;
  EXPECT_NE(gpu_loop_gap(t).find("unet_skips"), std::string::npos);
  t.model.unet_skips = false;
  t.model.attn_gain = 0.5;
  EXPECT_NE(gpu_loop_gap(t).find("attn_gain"), std::string::npos);
  t.model.attn_gain = 0;
  t.target_loss = 1.5;
  EXPECT_NE(gpu_loop_gap(t).find("target_loss"), std::string::npos);
}

}  // namespace
}  // namespace nanogpt
