// Generation (sample/generator.h) from the one model on a backend that is not the host's: on the
// CPU's kernels behind device-style memory (OffHostCpuBackend) the tokens must be the host run's,
// with and without the KV cache; on a GPU (CudaBackend, `nanogpt sample --device=cuda`) it must
// sample in the vocabulary on both paths. The GPU case skips, saying why, where the build has no
// CUDA backend or the machine no usable GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "backends/off_host_cpu_backend.h"
#include "core/check.h"
#include "core/rng.h"
#include "kernels/cpu_backend.h"
#include "model/gpt.h"
#include "model/init.h"
#include "sample/generator.h"
#include "sample/token_sampler.h"
#if NANOGPT_TEST_CUDA
#include "kernels/cuda/cuda_backend.h"
#endif

namespace nanogpt {
namespace {

ModelConfig small_model(bool modern) {
  ModelConfig c;
  c.vocab_size = 37;
  c.block_size = 24;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = modern ? 128 : 32;
  c.bias = !modern;
  if (modern) {
    c.position = "rotary";
    c.qk_norm = true;
    c.norm = "rmsnorm";
    c.activation = "relu2";
    c.unet_skips = true;
  }
  c.validate();
  return c;
}

// The tokens generated from `prompt` by a model with the host model's weights on `ops`.
std::vector<int> generate_on(const GPT& host, Backend& ops, bool on_device, bool kv_cache,
                             int max_new) {
  GPT model(host.config(), nullptr, MasterWeights::kInModel, on_device ? &ops : nullptr);
  ops.upload(model.params().data(), host.params().data(), host.params().size() * sizeof(float));
  TokenSampler sampler({/*temperature=*/0.8, /*top_k=*/10, /*top_p=*/1.0});
  Rng rng(5);
  GenerateOptions opt;
  opt.max_new_tokens = max_new;  // past block_size: the cached path refills its window
  opt.use_kv_cache = kv_cache;
  return generate(model, ops, {1, 2, 3, 4}, sampler, rng, opt);
}

std::unique_ptr<GPT> host_model(const ModelConfig& c) {
  auto host = std::make_unique<GPT>(c);
  init_weights(host->table(), host->params().data(), 11);
  return host;
}

class GenerateOnBackends : public ::testing::TestWithParam<bool> {};

TEST_P(GenerateOnBackends, OffTheHostGivesTheHostsTokensWithAndWithoutTheCache) {
  const auto host_ptr = host_model(small_model(GetParam()));
  const GPT& host = *host_ptr;
  for (bool kv_cache : {true, false}) {
    CpuBackend cpu;
    testing::OffHostCpuBackend off_host;
    const std::vector<int> want = generate_on(host, cpu, false, kv_cache, 40);
    const std::vector<int> got = generate_on(host, off_host, true, kv_cache, 40);
    EXPECT_EQ(got, want) << "kv_cache " << kv_cache;
    EXPECT_EQ(want.size(), 44u);
    EXPECT_GT(off_host.downloads, 0) << "the logits come back from the backend's memory";
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, GenerateOnBackends, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "modern" : "gpt2"; });

// `nanogpt sample --device=cuda`'s loop: generate() on a CudaBackend, with and without the KV
// cache (model_on_backends_test.cpp checks the GPU's logits against the host's).
TEST(GenerateOnCuda, SamplesInTheVocabularyWithAndWithoutTheCache) {
#if NANOGPT_TEST_CUDA
  std::string why;
  if (!cuda::device_available(&why)) GTEST_SKIP() << "cuda: no usable GPU here: " << why;
  for (bool modern : {false, true}) {
    const auto host = host_model(small_model(modern));
    for (bool kv_cache : {true, false}) {
      CudaBackend gpu(/*allow_tf32=*/false);
      const std::vector<int> got = generate_on(*host, gpu, true, kv_cache, 40);
      ASSERT_EQ(got.size(), 44u) << "modern " << modern << " kv_cache " << kv_cache;
      for (int t : got) EXPECT_TRUE(t >= 0 && t < host->config().vocab_size) << t;
    }
  }
#else
  GTEST_SKIP() << "cuda: this build has no CUDA backend (no nvcc was found when it was built)";
#endif
}

}  // namespace
}  // namespace nanogpt
