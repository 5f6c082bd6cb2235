// The architecture options (model/architecture.h) through the whole model, beyond the PyTorch
// check of gpt_fixture_test.cpp ("Modern"): the parameter table each option makes, its init, the
// config errors, and that every way of running the model (fused or not, flash or naive attention,
// block checkpointing, bfloat16, KV-cache decoding) computes the same model with every option on.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/rng.h"
#include "fixture.h"
#include "kernels/cpu_backend.h"
#include "model/architecture.h"
#include "model/gpt.h"
#include "model/kv_cache.h"
#include "random_tokens.h"

namespace nanogpt {
namespace {

using testing::max_abs;
using testing::max_abs_diff;
using testing::random_tokens;

// Every option on, with biases and dropout so that those paths are covered too.
ModelConfig modern(double dropout = 0.1) {
  ModelConfig c;
  c.n_layer = 3, c.n_head = 2, c.n_embd = 32, c.block_size = 40, c.vocab_size = 67;
  c.bias = true;
  c.dropout = dropout;
  c.norm = "rmsnorm";
  c.position = "rotary";
  c.qk_norm = true;
  c.qk_norm_gain = 2.0;
  c.activation = "relu2";
  c.tie_embeddings = false;
  c.logit_softcap = 2.0;
  c.unet_skips = true;  // (3 layers: block 0's output into block 2's input, block 1 without)
  c.attn_gain = 0.5;
  return c;
}

// Weights away from init (fixture.h; at 10x nanoGPT's std the head reaches the cap's bend).
void randomize(GPT& model, uint64_t seed) { testing::randomize_weights(model, seed, 10.0f); }

struct Result {
  float loss;
  std::vector<float> grads;
};

Result run(const KernelChoices& choices, DType dtype = DType::kF32, double dropout = 0.1) {
  const ModelConfig c = modern(dropout);
  CpuBackend ctx;
  GPT model(c);
  randomize(model, 5);
  model.set_kernel_choices(choices);
  model.set_dtype(dtype);
  const int B = 3, T = 37;
  std::vector<int> x = random_tokens(B * T, c.vocab_size, 1), y = random_tokens(B * T, c.vocab_size, 2);
  y[4] = -1;
  model.zero_grad();
  const float loss = model.forward(ctx, x.data(), y.data(), B, T, true, 77, 0.5f);
  model.backward(ctx);
  return {loss, std::vector<float>(model.grads().begin(), model.grads().end())};
}

void expect_close(const Result& a, const Result& b, double loss_tol, double grad_tol,
                  const std::string& what) {
  EXPECT_NEAR(a.loss, b.loss, loss_tol * b.loss) << what;
  const int64_t n = static_cast<int64_t>(b.grads.size());
  EXPECT_LE(max_abs_diff(a.grads.data(), b.grads.data(), n), grad_tol * max_abs(b.grads.data(), n))
      << what;
}

TEST(Architecture, TheParameterTableFollowsTheOptions) {
  const GPT gpt2([] {
    ModelConfig c = modern();
    return ModelConfig{.n_layer = c.n_layer, .n_head = c.n_head, .n_embd = c.n_embd,
                       .block_size = c.block_size, .vocab_size = c.vocab_size};
  }());
  EXPECT_NE(gpt2.table().find("wpe.weight"), nullptr);
  EXPECT_EQ(gpt2.table().find("lm_head.weight"), nullptr);
  EXPECT_TRUE(gpt2.architecture().beyond_gpt2().empty());

  const GPT m(modern());
  const ParamTable& t = m.table();
  EXPECT_EQ(t.find("wpe.weight"), nullptr) << "rotary positions: no position embedding";
  const ParamSpec& head = t.at("lm_head.weight");
  EXPECT_EQ(head.shape, (std::vector<int64_t>{128, 32}));
  EXPECT_TRUE(head.decay);
  EXPECT_GT(head.init_std, 0.0f);
  // FLOPs count the head's matmul, not the embedding lookup.
  int64_t all = 0;
  for (const ParamSpec& s : t.specs()) all += s.numel;
  EXPECT_EQ(t.num_params_for_mfu(), all - t.at("wte.weight").numel);
  EXPECT_EQ(m.architecture().beyond_gpt2().size(), 8u);
  const ParamSpec& skips = t.at("skip_weights");
  EXPECT_EQ(skips.shape, (std::vector<int64_t>{1}));
  EXPECT_FALSE(skips.decay);
  EXPECT_FALSE(skips.hidden_matrix);                        // AdamW's, not Muon's
  EXPECT_LT(skips.offset, t.at("h.0.ln_1.weight").offset);  // reported with wte, last
  // The attention gains: one scalar per block, inside its block's range (reported with it),
  // AdamW's, starting at attn_gain.
  for (int l = 0; l < 3; ++l) {
    const std::string p = "h." + std::to_string(l) + ".";
    const ParamSpec& g = t.at(p + "attn.gain");
    EXPECT_EQ(g.shape, (std::vector<int64_t>{1}));
    EXPECT_FALSE(g.decay);
    EXPECT_FALSE(g.hidden_matrix);
    EXPECT_FALSE(g.lowp_only);  // read in float32
    EXPECT_GT(g.offset, t.at(p + "attn.c_proj.weight").offset);
    EXPECT_LT(g.offset, t.at(p + "ln_2.weight").offset);
  }
  {
    GPT init(modern());
    init.init_weights(1);
    EXPECT_EQ(init.params()[skips.offset], 1.0f);
    EXPECT_EQ(init.params()[t.at("h.1.attn.gain").offset], 0.5f);
  }
  ModelConfig off = modern();
  off.attn_gain = 0;
  EXPECT_EQ(GPT(off).table().find("h.0.attn.gain"), nullptr);

  ModelConfig z = modern();
  z.zero_init_proj = true;
  GPT zero(z);
  zero.init_weights(3);
  for (const ParamSpec& s : zero.table().specs()) {
    const bool proj = s.name.find("c_proj.weight") != std::string::npos || s.name == "lm_head.weight";
    const double m_abs = max_abs(zero.params().data() + s.offset, s.numel);
    if (proj) {
      EXPECT_EQ(m_abs, 0.0) << s.name;
    } else if (s.init_std > 0.0f) {
      EXPECT_GT(m_abs, 0.0) << s.name;
    }
  }
}

TEST(Architecture, BadOptionsAreErrorsNamingTheKey) {
  auto expect_error = [](ModelConfig c, const std::string& key) {
    try {
      c.validate();
      ADD_FAILURE() << key << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  };
  ModelConfig c = modern();
  c.norm = "batchnorm";
  expect_error(c, "norm");
  c = modern();
  c.position = "alibi";
  expect_error(c, "position");
  c = modern();
  c.activation = "swiglu";
  expect_error(c, "activation");
  c = modern();
  c.logit_softcap = -1;
  expect_error(c, "logit_softcap");
  c = modern();
  c.n_layer = 1;
  expect_error(c, "unet_skips");
  c = modern();
  c.qk_norm_gain = 0;
  expect_error(c, "qk_norm_gain");
  c = modern();
  c.qk_norm = false;  // the gain scales QK-norm's queries: without it, an error naming both
  expect_error(c, "needs qk_norm = True");
  c = modern();
  c.rope_theta = 0.5;
  expect_error(c, "rope_theta");
  c = modern();
  c.attn_gain = -0.5;
  expect_error(c, "attn_gain");
  c = modern();
  c.n_embd = 30, c.n_head = 2;  // head size 15: rotary pairs need an even one
  expect_error(c, "even head size");
  c.position = "learned";
  EXPECT_NO_THROW(c.validate());
}

// Each option alone changes what the model computes (from the same weights where the table is the
// same): none of them is silently ignored.
TEST(Architecture, EachOptionChangesTheModel) {
  ModelConfig base = modern(0.0);
  base.norm = "layernorm", base.position = "learned", base.qk_norm = false;
  base.activation = "gelu", base.tie_embeddings = true, base.logit_softcap = 0;
  base.unet_skips = false, base.qk_norm_gain = 1.0, base.attn_gain = 0;
  auto loss_of = [](const ModelConfig& c) {
    CpuBackend ctx;
    GPT model(c);
    randomize(model, 11);
    const auto x = random_tokens(2 * 20, c.vocab_size, 3), y = random_tokens(2 * 20, c.vocab_size, 4);
    return model.forward(ctx, x.data(), y.data(), 2, 20, false);
  };
  const float l0 = loss_of(base);
  std::vector<ModelConfig> variants(8, base);
  variants[0].norm = "rmsnorm";
  variants[1].position = "rotary";
  variants[2].qk_norm = true;
  variants[3].activation = "relu2";
  variants[4].tie_embeddings = false;
  variants[5].logit_softcap = 1.0;
  variants[6].unet_skips = true;
  variants[7].attn_gain = 0.5;
  for (const ModelConfig& v : variants) {
    EXPECT_GT(std::fabs(loss_of(v) - l0), 1e-4) << Architecture::of(v).beyond_gpt2()[0];
  }
  ModelConfig gained = variants[2];  // QK-norm's query gain against QK-norm alone
  gained.qk_norm_gain = 2.0;
  EXPECT_GT(std::fabs(loss_of(gained) - loss_of(variants[2])), 1e-4) << "qk_norm_gain";
}

TEST(Architecture, EveryKernelPathComputesTheSameModel) {
  const Result fused = run({});
  expect_close(run({.naive_attention = false, .fused = false}), fused, 1e-5, 1e-4, "unfused");
  expect_close(run({.naive_attention = true, .fused = true}), fused, 1e-5, 1e-4, "naive");
  expect_close(run({.naive_attention = false, .fused = true, .fused_mlp = true}), fused, 1e-5, 1e-4,
               "fused_mlp");
  // Block checkpointing recomputes the same floats (QK-norm and rotary included).
  const Result recomputed = run({.checkpoint_blocks = true});
  EXPECT_EQ(recomputed.loss, fused.loss);
  EXPECT_EQ(recomputed.grads, fused.grads);
  // Keeping the LayerNorm and GELU outputs (recompute 0) keeps the same floats (RMSNorm, ReLU²,
  // the U-net skips' inputs and the attention gain's fused residual included).
  const Result kept = run({.recompute = 0});
  EXPECT_EQ(kept.loss, fused.loss);
  EXPECT_EQ(kept.grads, fused.grads);
  // bfloat16 (without dropout: the 16-bit attention draws its masks per group of batch elements,
  // ops_lowp.h): each tensor's gradient within 12 units of its roundoff u = 2^-8 (relative L2) of
  // float32's, the loss within 4 u (mixed_precision_test.cpp's reasoning; measured 2026-11: worst
  // tensor 0.019, each option alone 0.011..0.019 against GPT-2's 0.012; with QK-norm's query gain
  // 2, whose logits double the rounding of q and k, h.1.ln_1.weight 0.026 and the one-element sum
  // skip_weights 0.038, from 8 u before the gain). Checkpointing is bit-identical there too.
  const Result f32 = run({}, DType::kF32, 0.0), bf16 = run({}, DType::kBF16, 0.0);
  const double u = 1.0 / 256;
  EXPECT_NEAR(bf16.loss, f32.loss, 4 * u * f32.loss);
  for (const ParamSpec& s : GPT(modern()).table().specs()) {
    double err = 0, ref = 0;
    for (int64_t i = s.offset; i < s.offset + s.numel; ++i) {
      err += (double(bf16.grads[i]) - f32.grads[i]) * (double(bf16.grads[i]) - f32.grads[i]);
      ref += double(f32.grads[i]) * f32.grads[i];
    }
    if (ref > 0) EXPECT_LE(std::sqrt(err / ref), 12 * u) << s.name;
  }
  const Result bf16_recomputed = run({.checkpoint_blocks = true}, DType::kBF16, 0.0);
  EXPECT_EQ(bf16_recomputed.grads, bf16.grads);
  EXPECT_EQ(run({.recompute = 0}, DType::kBF16, 0.0).grads, bf16.grads);
}

TEST(Architecture, KvCacheDecodingMatchesTheFullForward) {
  const ModelConfig c = modern(0.0);
  CpuBackend ctx;
  GPT model(c);
  randomize(model, 21);
  const int T = c.block_size, V = c.vocab_size, Vp = c.padded_vocab_size();
  const std::vector<int> x = random_tokens(T, V, 5);
  model.forward(ctx, x.data(), nullptr, 1, T, false);
  const std::vector<float> full(model.logits(), model.logits() + static_cast<int64_t>(T) * Vp);
  for (int i = 0; i < T * Vp; i += Vp) EXPECT_LT(max_abs(full.data() + i, V), 2.0);  // capped
  KvCache cache(c, T);
  std::vector<float> one(Vp);
  const double scale = max_abs(full.data(), static_cast<int64_t>(full.size()));
  for (int pos = 0; pos < T; ++pos) {
    model.forward_one(ctx, cache, x[pos], pos, one.data());
    EXPECT_LE(max_abs_diff(one.data(), full.data() + pos * Vp, V), 1e-5 * scale) << "pos " << pos;
  }
}

}  // namespace
}  // namespace nanogpt
