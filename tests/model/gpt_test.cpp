// Behaviour of the GPT model beyond the PyTorch fixture: init statistics, gradient accumulation,
// dropout (training vs eval, gradient consistency), KV-cache decoding == full forward, and the
// errors raised at the API edge.
#include "model/gpt.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/check.h"
#include "core/rng.h"
#include "fixture.h"
#include "kernels/cpu_backend.h"
#include "kernels/ops.h"
#include "model/init.h"
#include "random_tokens.h"

namespace nanogpt {
namespace {

using testing::random_tokens;

using testing::max_abs;
using testing::max_abs_diff;

ModelConfig tiny_config(bool bias = true, double dropout = 0.0) {
  ModelConfig c;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 32;
  c.block_size = 16;
  c.vocab_size = 67;
  c.bias = bias;
  c.dropout = dropout;
  return c;
}

// Non-trivial weights (fixture.h), the random tensors at 5x nanoGPT's std.
void randomize(GPT& model, uint64_t seed) { testing::randomize_weights(model, seed, 5.0f); }

TEST(GptInit, FollowsNanoGptStatistics) {
  ModelConfig c = tiny_config();
  c.n_embd = 64;
  c.n_layer = 4;
  GPT model(c);
  model.init_weights(1337);
  const float* p = model.params().data();
  for (const ParamSpec& s : model.table().specs()) {
    double sum = 0.0, sq = 0.0;
    for (int64_t i = 0; i < s.numel; ++i) {
      sum += p[s.offset + i];
      sq += double(p[s.offset + i]) * p[s.offset + i];
    }
    const double mean = sum / s.numel, std = std::sqrt(sq / s.numel - mean * mean);
    if (s.init_one) {
      EXPECT_EQ(mean, 1.0) << s.name;
      EXPECT_EQ(std, 0.0) << s.name;
    } else if (s.init_std == 0.0f) {
      EXPECT_EQ(max_abs(p + s.offset, s.numel), 0.0) << s.name;
    } else {
      const double expected = s.name.find("c_proj.weight") != std::string::npos
                                  ? 0.02 / std::sqrt(2.0 * c.n_layer)
                                  : 0.02;
      EXPECT_NEAR(s.init_std, expected, 1e-9) << s.name;
      // >= 4096 samples: the std estimate is within ~2.2% at 2 sigma; allow 6%.
      EXPECT_NEAR(std, expected, 0.06 * expected) << s.name;
      EXPECT_NEAR(mean, 0.0, 4.0 * expected / std::sqrt(double(s.numel))) << s.name;
    }
  }
  GPT same(c), other(c);
  same.init_weights(1337);
  other.init_weights(1338);
  const int64_t n = model.table().total_numel();
  EXPECT_EQ(max_abs_diff(model.params().data(), same.params().data(), n), 0.0);
  EXPECT_GT(max_abs_diff(model.params().data(), other.params().data(), n), 0.0);
}

TEST(GptGradAccum, KMicroBatchesEqualOneBatch) {
  const ModelConfig c = tiny_config();
  CpuBackend ctx;
  GPT model(c);
  randomize(model, 7);
  const int B = 4, T = 16, k = 2;
  const std::vector<int> x = random_tokens(B * T, c.vocab_size, 1);
  const std::vector<int> y = random_tokens(B * T, c.vocab_size, 2);
  model.zero_grad();
  const float full_loss = model.forward(ctx, x.data(), y.data(), B, T, true);
  model.backward(ctx);
  const std::vector<float> full(model.grads().begin(), model.grads().end());

  model.zero_grad();
  double accum_loss = 0.0;
  const int mb = B / k;
  for (int i = 0; i < k; ++i) {
    const int64_t off = static_cast<int64_t>(i) * mb * T;
    accum_loss += model.forward(ctx, x.data() + off, y.data() + off, mb, T, true, 0, 1.0f / k) / k;
    model.backward(ctx);
  }
  EXPECT_NEAR(accum_loss, full_loss, 1e-5 * full_loss);
  const int64_t n = model.table().total_numel();
  const double err = max_abs_diff(model.grads().data(), full.data(), n);
  EXPECT_LE(err, 1e-5 * max_abs(full.data(), n)) << "max |diff| " << err;
  EXPECT_GT(max_abs(full.data(), n), 0.0);

  // Without zero_grad the next backward adds on top: twice the gradient.
  model.zero_grad();
  model.forward(ctx, x.data(), y.data(), B, T, true);
  model.backward(ctx);
  model.forward(ctx, x.data(), y.data(), B, T, true);
  model.backward(ctx);
  for (int64_t i = 0; i < n; i += 97) {
    EXPECT_NEAR(model.grads()[i], 2.0f * full[i], 1e-5 * max_abs(full.data(), n));
  }
}

TEST(GptClassifier, ChunkedHeadEqualsOneChunkAndTheLogits) {
  // The classifier runs over chunks of rows (never holding all logits); chunks of 48 rows (a ragged
  // last chunk) give the loss and gradients of one chunk, and the loss of the full logits.
  const ModelConfig c = tiny_config();
  CpuBackend ctx;
  GPT model(c);
  randomize(model, 11);
  const int B = 8, T = 16, V = c.vocab_size, Vp = c.padded_vocab_size();
  const std::vector<int> x = random_tokens(B * T, V, 3);
  std::vector<int> y = random_tokens(B * T, V, 4);
  y[50] = -1;
  model.zero_grad();
  const float whole = model.forward(ctx, x.data(), y.data(), B, T, true, 0, 0.5f);
  model.backward(ctx);
  const std::vector<float> g1(model.grads().begin(), model.grads().end());
  model.set_classifier_chunk_rows(48);
  model.zero_grad();
  const float chunked = model.forward(ctx, x.data(), y.data(), B, T, true, 0, 0.5f);
  model.backward(ctx);
  EXPECT_NEAR(chunked, whole, 1e-6 * whole);
  const int64_t n = model.table().total_numel();
  const double scale = max_abs(g1.data(), n);
  EXPECT_LE(max_abs_diff(model.grads().data(), g1.data(), n), 1e-6 * scale);
  // Eval (no backward) in chunks gives the same loss, and so do the full logits.
  EXPECT_NEAR(model.forward(ctx, x.data(), y.data(), B, T, false), whole, 1e-6 * whole);
  model.forward(ctx, x.data(), nullptr, B, T, false);
  std::vector<float> losses(B * T);
  ref::crossentropy_forward(losses.data(), model.logits(), y.data(), B * T, V, Vp);
  double sum = 0;
  for (float l : losses) sum += l;
  EXPECT_NEAR(sum / (B * T - 1), whole, 1e-5 * whole);
}

// The classifier's chunk (classifier_chunk_rows): 16M floats of logits in float32 and float16, 64M
// in bfloat16 (whose weight-gradient product is slow with few rows), in multiples of 64 rows, never
// more than N; and the activation layout charges exactly that chunk to the classifier.
TEST(GptClassifier, ChunkRowsDependOnTheDtypeAndBoundTheLogits) {
  const int64_t Vp = 50304, N = 4096;
  EXPECT_EQ(classifier_chunk_rows(N, Vp, DType::kF32), 320);
  EXPECT_EQ(classifier_chunk_rows(N, Vp, DType::kF16), 320);
  EXPECT_EQ(classifier_chunk_rows(N, Vp, DType::kBF16), 1280);
  EXPECT_EQ(classifier_chunk_rows(100, Vp, DType::kBF16), 100);
  EXPECT_EQ(classifier_chunk_rows(N, 1 << 30, DType::kF32), 64);  // at least 64 rows
  ModelConfig c = tiny_config();
  c.vocab_size = 50257;
  c.n_embd = 64;
  const auto classifier_bytes = [&](DType t) {
    for (const auto& [kind, bytes] : activation_layout(c, N, 0, t).by_kind) {
      if (kind == kArenaClassifier) return bytes;
    }
    return int64_t{0};
  };
  // lnf (bf16), its stats, dlnf, losses, and the chunk: fp32 logits plus bf16 dlogits.
  const int64_t rest = N * 64 * 2 + 2 * N * 4 + N * 64 * 4 + N * 4;
  EXPECT_EQ(classifier_bytes(DType::kBF16), rest + 1280 * Vp * (4 + 2));
}

// Directional finite difference of the loss along the normalized gradient: (L(w+hu)-L(w-hu))/2h
// must equal |g|. Checks that backward differentiates exactly the function forward computed
// (including dropout masks recomputed from the same seeds).
double directional_derivative_error(GPT& model, CpuBackend& ctx, const std::vector<int>& x,
                                    const std::vector<int>& y, int B, int T, uint64_t seed,
                                    double h = 1e-2) {
  model.zero_grad();
  model.forward(ctx, x.data(), y.data(), B, T, true, seed);
  model.backward(ctx);
  const int64_t n = model.table().total_numel();
  std::vector<float> g(model.grads().begin(), model.grads().end());
  double norm = 0.0;
  for (float v : g) norm += double(v) * v;
  norm = std::sqrt(norm);
  const std::vector<float> w(model.params().begin(), model.params().end());
  auto loss_at = [&](double t) {
    for (int64_t i = 0; i < n; ++i) model.params()[i] = float(w[i] + t * g[i] / norm);
    return double(model.forward(ctx, x.data(), y.data(), B, T, true, seed));
  };
  const double fd = (loss_at(h) - loss_at(-h)) / (2 * h);
  std::copy(w.begin(), w.end(), model.params().begin());
  return std::fabs(fd - norm) / norm;
}

TEST(GptDropout, ChangesTrainingLossNotEvalLoss) {
  CpuBackend ctx;
  GPT plain(tiny_config(true, 0.0)), dropped(tiny_config(true, 0.2));
  randomize(plain, 11);
  std::copy(plain.params().begin(), plain.params().end(), dropped.params().begin());
  const int B = 2, T = 16;
  const std::vector<int> x = random_tokens(B * T, 67, 3), y = random_tokens(B * T, 67, 4);
  const float eval_plain = plain.forward(ctx, x.data(), y.data(), B, T, false);
  const float eval_drop = dropped.forward(ctx, x.data(), y.data(), B, T, false, 5);
  EXPECT_EQ(eval_plain, eval_drop);  // eval ignores dropout
  const float train_plain = plain.forward(ctx, x.data(), y.data(), B, T, true, 5);
  EXPECT_NEAR(train_plain, eval_plain, 1e-6 * eval_plain);  // p = 0: training == eval
  const float train_a = dropped.forward(ctx, x.data(), y.data(), B, T, true, 5);
  const float train_a2 = dropped.forward(ctx, x.data(), y.data(), B, T, true, 5);
  const float train_b = dropped.forward(ctx, x.data(), y.data(), B, T, true, 6);
  EXPECT_GT(std::fabs(train_a - eval_drop), 1e-3);
  EXPECT_EQ(train_a, train_a2);  // masks are a function of the seed
  EXPECT_NE(train_a, train_b);
}

// attn_dropout: the attention weights' dropout apart from the embeddings' and residual paths'.
// -1 (the default) is dropout's own value, the same masks bit for bit; 0 with dropout > 0 and
// > 0 with dropout 0 each give a third training loss; evaluation ignores both.
TEST(GptDropout, AttentionDropoutApartFromTheOthers) {
  CpuBackend ctx;
  const int B = 2, T = 16;
  const std::vector<int> x = random_tokens(B * T, 67, 3), y = random_tokens(B * T, 67, 4);
  auto losses = [&](double dropout, double attn_dropout) {
    ModelConfig c = tiny_config(true, dropout);
    c.attn_dropout = attn_dropout;
    c.validate();
    GPT model(c);
    randomize(model, 11);
    const float train = model.forward(ctx, x.data(), y.data(), B, T, true, 5);
    const float eval = model.forward(ctx, x.data(), y.data(), B, T, false, 5);
    return std::pair{train, eval};
  };
  const auto [plain, eval_plain] = losses(0.0, -1.0);
  const auto [both, eval_both] = losses(0.2, -1.0);
  const auto [both_named, eval_named] = losses(0.2, 0.2);
  const auto [residual_only, eval_residual] = losses(0.2, 0.0);
  const auto [attention_only, eval_attention] = losses(0.0, 0.2);
  EXPECT_EQ(both, both_named) << "attn_dropout -1 is dropout's value";
  EXPECT_GT(std::fabs(residual_only - both), 1e-4) << "no masks on the attention weights";
  EXPECT_GT(std::fabs(residual_only - plain), 1e-4) << "residual masks kept";
  EXPECT_GT(std::fabs(attention_only - plain), 1e-4) << "attention masks alone";
  EXPECT_GT(std::fabs(attention_only - both), 1e-4);
  for (float e : {eval_both, eval_named, eval_residual, eval_attention}) EXPECT_EQ(e, eval_plain);
  ModelConfig bad = tiny_config(true, 0.1);
  bad.attn_dropout = 1.0;
  try {
    bad.validate();
    ADD_FAILURE() << "attn_dropout = 1 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("attn_dropout = 1"), std::string::npos) << e.what();
  }
}

TEST(GptBackward, MatchesFiniteDifferenceForDropoutBiasAndGeluVariants) {
  CpuBackend ctx;
  const int B = 2, T = 16;
  const std::vector<int> x = random_tokens(B * T, 67, 8), y = random_tokens(B * T, 67, 9);
  struct Case {
    bool bias;
    double dropout;
    const char* gelu;
    double attn_dropout = -1.0;
  };
  for (const Case& k :
       {Case{true, 0.0, "tanh"}, Case{true, 0.3, "tanh"}, Case{false, 0.3, "tanh"},
        Case{true, 0.0, "exact"}, Case{true, 0.3, "tanh", 0.0}, Case{true, 0.0, "tanh", 0.3}}) {
    ModelConfig c = tiny_config(k.bias, k.dropout);
    c.gelu = k.gelu;
    c.attn_dropout = k.attn_dropout;
    GPT model(c);
    randomize(model, 12);
    const double err = directional_derivative_error(model, ctx, x, y, B, T, 99);
    // float32 loss (~4, rounding ~1e-6) over 2h = 0.02 plus O(h^2) curvature: ~5e-4 relative.
    // A dropout-mask mismatch between forward and backward gives ~0.3.
    const std::string what = fmt::format("bias {} dropout {} gelu {} attn_dropout {}", k.bias,
                                         k.dropout, k.gelu, k.attn_dropout);
    EXPECT_LT(err, 5e-3) << what;
    RecordProperty("fd_rel_err " + what, fmt::format("{:.3g}", err));
  }
}

// The gradients of single parameters (arena offsets: scalars such as skip and gain weights, whose
// share of the whole gradient is small) against central differences of the loss, h = 1e-2, each
// required non-trivial (dropout masks from seed 99).
void expect_gradients_match_central_differences(GPT& model, CpuBackend& ctx,
                                                const std::vector<int>& x,
                                                const std::vector<int>& y, int B, int T,
                                                const std::vector<int64_t>& offsets,
                                                const std::string& what) {
  model.zero_grad();
  model.forward(ctx, x.data(), y.data(), B, T, true, 99);
  model.backward(ctx);
  for (int64_t at : offsets) {
    const double g = model.grads()[at];
    float& w = model.params()[at];
    const float w0 = w, h = 1e-2f;
    w = w0 + h;
    const double up = model.forward(ctx, x.data(), y.data(), B, T, true, 99);
    w = w0 - h;
    const double down = model.forward(ctx, x.data(), y.data(), B, T, true, 99);
    w = w0;
    const double fd = (up - down) / (2.0 * h);
    EXPECT_GT(std::fabs(g), 1e-4) << what << ", parameter at " << at;
    EXPECT_NEAR(g, fd, 2e-2 * std::fabs(fd) + 1e-4) << what << ", parameter at " << at;
  }
}

// U-net skips (unet_skips) at 3 layers (one skip, 0 -> 2, the middle block without one) and 4
// (two, crossing): the whole gradient along its direction, and each skip weight's gradient alone
// against its central difference (its share of the whole gradient is small).
TEST(GptBackward, MatchesFiniteDifferenceWithUnetSkips) {
  CpuBackend ctx;
  const int B = 2, T = 16;
  const std::vector<int> x = random_tokens(B * T, 67, 8), y = random_tokens(B * T, 67, 9);
  for (int layers : {3, 4}) {
    ModelConfig c = tiny_config(true, 0.3);
    c.n_layer = layers;
    c.unet_skips = true;
    GPT model(c);
    randomize(model, 13);
    const ParamSpec& skips = model.table().at("skip_weights");
    ASSERT_EQ(skips.numel, layers / 2);
    for (int64_t i = 0; i < skips.numel; ++i) model.params()[skips.offset + i] = 0.8f + 0.3f * i;
    EXPECT_LT(directional_derivative_error(model, ctx, x, y, B, T, 99), 5e-3) << layers;
    std::vector<int64_t> offsets;
    for (int64_t i = 0; i < skips.numel; ++i) offsets.push_back(skips.offset + i);
    expect_gradients_match_central_differences(model, ctx, x, y, B, T, offsets,
                                               fmt::format("skips of {} layers", layers));
  }
}

// The attention branch's learned gain (attn_gain), with and without dropout on the branch: the
// whole gradient along its direction, and each block's gain alone against its central difference.
// Gains 0.6 and 1.1 take the backward's division ((residual2 - x) / gain); 0 and 0.004 (below
// kGainDivideMin) its recomputation of the branch from atty, where the division cannot work.
TEST(GptBackward, MatchesFiniteDifferenceWithAttnGain) {
  CpuBackend ctx;
  const int B = 2, T = 16;
  const std::vector<int> x = random_tokens(B * T, 67, 8), y = random_tokens(B * T, 67, 9);
  for (double dropout : {0.0, 0.3}) {
    ModelConfig c = tiny_config(true, dropout);
    c.n_layer = 2;
    c.attn_gain = 0.5;
    GPT model(c);
    randomize(model, 15);
    for (const std::vector<float>& gains :
         {std::vector<float>{0.6f, 1.1f}, std::vector<float>{0.0f, 0.004f}}) {
      for (int l = 0; l < 2; ++l) {
        model.params()[model.table().at("h." + std::to_string(l) + ".attn.gain").offset] = gains[l];
      }
      const std::string what = fmt::format("dropout {} gains {} {}", dropout, gains[0], gains[1]);
      EXPECT_LT(directional_derivative_error(model, ctx, x, y, B, T, 99), 5e-3) << what;
      expect_gradients_match_central_differences(
          model, ctx, x, y, B, T,
          {model.table().at("h.0.attn.gain").offset, model.table().at("h.1.attn.gain").offset},
          what);
    }
  }
}

// QK-norm with its query gain (qk_norm_gain 2.5), with and without rotary: the whole gradient
// along its direction (the gain sits inside the normalization's backward). The sharper softmax
// curves the loss more: at the usual step h = 1e-2 the central difference's O(h^2) error reached
// 0.013 (rotary, seed 14), at h = 3e-3 0.0012, 11x less as h^2 predicts (gain 1: 3e-5..7e-5).
TEST(GptBackward, MatchesFiniteDifferenceWithQkNormGain) {
  CpuBackend ctx;
  const int B = 2, T = 16;
  const std::vector<int> x = random_tokens(B * T, 67, 8), y = random_tokens(B * T, 67, 9);
  for (const char* position : {"learned", "rotary"}) {
    ModelConfig c = tiny_config(false, 0.0);
    c.qk_norm = true;
    c.qk_norm_gain = 2.5;
    c.position = position;
    GPT model(c);
    randomize(model, 14);
    EXPECT_LT(directional_derivative_error(model, ctx, x, y, B, T, 99, 3e-3), 5e-3) << position;
  }
}

TEST(GptKvCache, ForwardOneMatchesFullForward) {
  for (bool bias : {true, false}) {
    const ModelConfig c = tiny_config(bias);
    CpuBackend ctx;
    GPT model(c);
    randomize(model, 21);
    const int T = c.block_size, V = c.vocab_size, Vp = c.padded_vocab_size();
    const std::vector<int> x = random_tokens(T, V, 5);
    model.forward(ctx, x.data(), nullptr, 1, T, false);
    const std::vector<float> full(model.logits(), model.logits() + static_cast<int64_t>(T) * Vp);

    KvCache cache(c, T);
    std::vector<float> one(Vp);
    const double scale = max_abs(full.data(), static_cast<int64_t>(full.size()));
    for (int pos = 0; pos < T; ++pos) {
      model.forward_one(ctx, cache, x[pos], pos, one.data());
      EXPECT_EQ(cache.length(), pos + 1);
      const double err = max_abs_diff(one.data(), full.data() + pos * Vp, V);
      EXPECT_LE(err, 1e-5 * scale) << "bias " << bias << " pos " << pos;
    }
    // Rewinding re-runs a position from the cached prefix.
    model.forward_one(ctx, cache, x[5], 5, one.data());
    EXPECT_LE(max_abs_diff(one.data(), full.data() + 5 * Vp, V), 1e-5 * scale);
    EXPECT_THROW(model.forward_one(ctx, cache, x[0], 7, one.data()), Error);  // gap in the cache
  }
}

TEST(GptErrors, RejectBadInputsWithErrors) {
  const ModelConfig c = tiny_config();
  CpuBackend ctx;
  GPT model(c);
  model.init_weights(1);
  std::vector<int> x = random_tokens(2 * 17, 67, 1);
  EXPECT_THROW(model.forward(ctx, x.data(), nullptr, 2, 17, false), Error);  // T > block_size
  EXPECT_THROW(model.backward(ctx), Error);                                  // no forward yet
  x[3] = 67;
  EXPECT_THROW(model.forward(ctx, x.data(), nullptr, 2, 16, false), Error);  // id >= V
  x[3] = 0;
  std::vector<int> y(x.begin(), x.begin() + 32);
  y[0] = -2;
  EXPECT_THROW(model.forward(ctx, x.data(), y.data(), 2, 16, true), Error);
  y[0] = -1;
  model.forward(ctx, x.data(), y.data(), 2, 16, true);
  EXPECT_EQ(model.num_valid_targets(), 31);
  EXPECT_THROW(model.logits(), Error);  // a forward with targets keeps no logits
  model.backward(ctx);
  EXPECT_THROW(model.backward(ctx), Error);  // once per forward
  ModelConfig bad = c;
  bad.n_embd = 33;
  EXPECT_THROW(GPT{bad}, Error);
}

}  // namespace
}  // namespace nanogpt
