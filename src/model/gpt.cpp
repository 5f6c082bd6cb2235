// GPT-2 forward, backward and one-token decoding as sequences of kernel calls (see gpt.h).
// Block:  x -> ln1 -> qkv -> attention -> attproj -> [dropout] -> residual2 = x + .
//           -> ln2 -> fc -> gelu -> fcproj -> [dropout] -> residual3 = residual2 + .
// Head:   lnf -> logits = lnf . wte^T (tied) -> cross-entropy over the first V columns.
#include "model/gpt.h"

#include <algorithm>
#include <cstring>

#include "core/check.h"
#include "core/rng.h"
#include "kernels/ops.h"
#include "model/init.h"

namespace nanogpt {

namespace {

void zero(float* p, int64_t n) { std::memset(p, 0, static_cast<size_t>(n) * sizeof(float)); }

void scale(float* p, int64_t n, float s) {
  for (int64_t i = 0; i < n; ++i) p[i] *= s;
}

// Dropout sites: embedding output, attention probabilities, attention and MLP residual branches.
enum Site : int { kSiteEmbedding = 0, kSiteAttnProbs = 1, kSiteAttnOut = 2, kSiteMlpOut = 3 };

}  // namespace

GPT::GPT(const ModelConfig& config, MemoryTracker* tracker)
    : config_((config.validate(), config)),
      table_(config_),
      tracker_(tracker),
      params_(static_cast<size_t>(table_.total_numel()), tracker),
      grads_(static_cast<size_t>(table_.total_numel()), tracker) {
  w_ = bind_weights(table_, config_.n_layer, params_.data());
  g_ = bind_weights(table_, config_.n_layer, grads_.data());
}

void GPT::init_weights(uint64_t seed) { nanogpt::init_weights(table_, params_.data(), seed); }

uint64_t GPT::site_seed(int layer, int site) const {
  return splitmix64(dropout_seed_ ^ splitmix64(static_cast<uint64_t>(layer + 1) * 8 + site));
}

void GPT::check_tokens(const int* tokens, int64_t n, bool allow_ignore, const char* what) const {
  const int V = config_.vocab_size;
  for (int64_t i = 0; i < n; ++i) {
    const int t = tokens[i];
    CHECK((t >= 0 && t < V) || (allow_ignore && t == -1),
          "{}[{}] = {}: expected a token id in 0..{}{} (vocab_size {}); is the data tokenized "
          "with this model's vocabulary?",
          what, i, t, V - 1, allow_ignore ? " or -1 (ignore)" : "", V);
  }
}

const float* GPT::logits() const {
  CHECK(logits_valid_,
        "GPT::logits(): no logits; the last forward was a training forward with targets (its "
        "logits were overwritten by dlogits) or none ran. Run forward with training=false.");
  return acts_.logits;
}

float GPT::forward(KernelContext& ctx, const int* inputs, const int* targets, int B, int T,
                   bool training, uint64_t dropout_seed) {
  CHECK(B >= 1 && T >= 1 && T <= config_.block_size,
        "GPT::forward: B = {}, T = {}; expected B >= 1 and 1 <= T <= block_size ({})", B, T,
        config_.block_size);
  const int64_t N = static_cast<int64_t>(B) * T;
  const int C = config_.n_embd, NH = config_.n_head, V = config_.vocab_size;
  const int Vp = config_.padded_vocab_size();
  const GeluKind gelu = config_.gelu_kind();
  check_tokens(inputs, N, false, "inputs");
  if (targets) check_tokens(targets, N, true, "targets");
  acts_.reserve(config_, N, tracker_);
  inputs_.assign(inputs, inputs + N);
  B_ = B, T_ = T;
  dropout_seed_ = dropout_seed;
  dropout_p_ = training ? static_cast<float>(config_.dropout) : 0.0f;
  const float p = dropout_p_;
  const bool drop = p > 0.0f;
  Activations& a = acts_;

  cpu::encoder_forward(a.encoded, inputs, w_.wte, w_.wpe, B, T, C);  // (N, C)
  const float* x = a.encoded;
  if (drop) {
    cpu::dropout_forward(a.encoded_drop, a.encoded, N * C, p, site_seed(-1, kSiteEmbedding));
    x = a.encoded_drop;
  }
  for (int l = 0; l < config_.n_layer; ++l) {
    const BlockWeights& bw = w_.h[l];
    LayerActivations& la = a.layers[l];
    cpu::layernorm_forward(la.ln1, la.ln1_mean, la.ln1_rstd, x, bw.ln1w, bw.ln1b, N, C);
    cpu::matmul_forward(ctx, la.qkv, la.ln1, bw.qkvw, bw.qkvb, N, C, 3 * C);  // (N, 3C)
    cpu::attention_forward(la.atty, la.lse, la.qkv, B, T, C, NH, p, site_seed(l, kSiteAttnProbs));
    cpu::matmul_forward(ctx, la.attproj, la.atty, bw.attprojw, bw.attprojb, N, C, C);
    const float* attn_out = la.attproj;
    if (drop) {
      cpu::dropout_forward(la.attproj_drop, la.attproj, N * C, p, site_seed(l, kSiteAttnOut));
      attn_out = la.attproj_drop;
    }
    cpu::residual_forward(la.residual2, x, attn_out, N * C);
    cpu::layernorm_forward(la.ln2, la.ln2_mean, la.ln2_rstd, la.residual2, bw.ln2w, bw.ln2b, N, C);
    cpu::matmul_forward(ctx, la.fch, la.ln2, bw.fcw, bw.fcb, N, C, 4 * C);  // (N, 4C)
    cpu::gelu_forward(la.fch_gelu, la.fch, N * 4 * C, gelu);
    cpu::matmul_forward(ctx, la.fcproj, la.fch_gelu, bw.fcprojw, bw.fcprojb, N, 4 * C, C);
    const float* mlp_out = la.fcproj;
    if (drop) {
      cpu::dropout_forward(la.fcproj_drop, la.fcproj, N * C, p, site_seed(l, kSiteMlpOut));
      mlp_out = la.fcproj_drop;
    }
    cpu::residual_forward(la.residual3, la.residual2, mlp_out, N * C);
    x = la.residual3;
  }
  cpu::layernorm_forward(a.lnf, a.lnf_mean, a.lnf_rstd, x, w_.lnfw, w_.lnfb, N, C);
  cpu::matmul_forward(ctx, a.logits, a.lnf, w_.wte, nullptr, N, C, Vp);  // (N, Vp) tied head

  backward_ready_ = false;
  logits_valid_ = true;
  num_valid_ = 0;
  if (!targets) return 0.0f;
  for (int64_t i = 0; i < N; ++i) num_valid_ += targets[i] != -1;
  const float dloss = num_valid_ > 0 ? 1.0f / static_cast<float>(num_valid_) : 0.0f;
  if (training) {  // dlogits overwrite the logits in place
    cpu::crossentropy_forward_backward(a.losses, a.logits, a.logits, targets, dloss, N, V, Vp);
    backward_ready_ = true;
    logits_valid_ = false;
  } else {
    cpu::crossentropy_forward(a.losses, a.logits, targets, N, V, Vp);
  }
  double sum = 0.0;
  for (int64_t i = 0; i < N; ++i) sum += a.losses[i];
  return num_valid_ > 0 ? static_cast<float>(sum / static_cast<double>(num_valid_)) : 0.0f;
}

void GPT::backward(KernelContext& ctx, float loss_scale) {
  CHECK(backward_ready_,
        "GPT::backward: needs a preceding forward with targets and training=true (and runs at "
        "most once per forward)");
  backward_ready_ = false;
  const int B = B_, T = T_;
  const int64_t N = static_cast<int64_t>(B) * T;
  const int C = config_.n_embd, NH = config_.n_head, Vp = config_.padded_vocab_size();
  const GeluKind gelu = config_.gelu_kind();
  const float p = dropout_p_;
  const bool drop = p > 0.0f;
  scratch_.reserve(config_, N, tracker_);
  Activations& a = acts_;
  GradScratch& s = scratch_;
  const float* x_last = a.layers.back().residual3;

  // Head: dlogits (N, Vp) sit in a.logits. loss_scale is applied to the (N, C) sides of the tied
  // matmul instead of the (N, Vp) dlogits: dwte += dlogits^T . (s * lnf); dlnf = s * dlogits . wte.
  // (lnf is not needed after this, so it is scaled in place.)
  if (loss_scale != 1.0f) scale(a.lnf, N * C, loss_scale);
  zero(s.dc, N * C);
  cpu::matmul_backward(ctx, s.dc, g_.wte, nullptr, a.logits, a.lnf, w_.wte, N, C, Vp);
  if (loss_scale != 1.0f) scale(s.dc, N * C, loss_scale);
  zero(s.dresidual, N * C);
  cpu::layernorm_backward(s.dresidual, g_.lnfw, g_.lnfb, s.dc, x_last, w_.lnfw, a.lnf_mean,
                          a.lnf_rstd, N, C);

  // Blocks in reverse. s.dresidual holds d(residual3); the identity path of each residual add is
  // kept by accumulating the branch's input gradient into it (so it becomes d(residual2), d(x)).
  for (int l = config_.n_layer - 1; l >= 0; --l) {
    const BlockWeights& bw = w_.h[l];
    BlockWeights& bg = g_.h[l];
    LayerActivations& la = a.layers[l];
    const float* x = l > 0 ? a.layers[l - 1].residual3 : (drop ? a.encoded_drop : a.encoded);

    const float* dmlp_out = s.dresidual;
    if (drop) {
      zero(s.ddrop, N * C);
      cpu::dropout_backward(s.ddrop, s.dresidual, N * C, p, site_seed(l, kSiteMlpOut));
      dmlp_out = s.ddrop;
    }
    zero(s.dfch_gelu, N * 4 * C);
    cpu::matmul_backward(ctx, s.dfch_gelu, bg.fcprojw, bg.fcprojb, dmlp_out, la.fch_gelu,
                         bw.fcprojw, N, 4 * C, C);
    zero(s.dfch, N * 4 * C);
    cpu::gelu_backward(s.dfch, la.fch, s.dfch_gelu, N * 4 * C, gelu);
    zero(s.dc, N * C);
    cpu::matmul_backward(ctx, s.dc, bg.fcw, bg.fcb, s.dfch, la.ln2, bw.fcw, N, C, 4 * C);
    cpu::layernorm_backward(s.dresidual, bg.ln2w, bg.ln2b, s.dc, la.residual2, bw.ln2w, la.ln2_mean,
                            la.ln2_rstd, N, C);

    const float* dattn_out = s.dresidual;
    if (drop) {
      zero(s.ddrop, N * C);
      cpu::dropout_backward(s.ddrop, s.dresidual, N * C, p, site_seed(l, kSiteAttnOut));
      dattn_out = s.ddrop;
    }
    zero(s.dc, N * C);  // d(atty)
    cpu::matmul_backward(ctx, s.dc, bg.attprojw, bg.attprojb, dattn_out, la.atty, bw.attprojw, N, C,
                         C);
    zero(s.dqkv, N * 3 * C);
    cpu::attention_backward(s.dqkv, s.dc, la.atty, la.lse, la.qkv, B, T, C, NH, p,
                            site_seed(l, kSiteAttnProbs));
    zero(s.dc, N * C);  // d(ln1)
    cpu::matmul_backward(ctx, s.dc, bg.qkvw, bg.qkvb, s.dqkv, la.ln1, bw.qkvw, N, C, 3 * C);
    cpu::layernorm_backward(s.dresidual, bg.ln1w, bg.ln1b, s.dc, x, bw.ln1w, la.ln1_mean,
                            la.ln1_rstd, N, C);
  }

  const float* demb = s.dresidual;
  if (drop) {
    zero(s.ddrop, N * C);
    cpu::dropout_backward(s.ddrop, s.dresidual, N * C, p, site_seed(-1, kSiteEmbedding));
    demb = s.ddrop;
  }
  cpu::encoder_backward(g_.wte, g_.wpe, demb, inputs_.data(), B, T, C);
}

void GPT::forward_one(KernelContext& ctx, KvCache& cache, int token, int pos, float* logits_out) {
  CHECK(pos >= 0 && pos < cache.max_T() && pos <= cache.length(),
        "GPT::forward_one: pos {} must be in 0..{} (cache holds {} positions, max {})", pos,
        std::min(cache.length(), cache.max_T() - 1), cache.length(), cache.max_T());
  check_tokens(&token, 1, false, "token");
  const int C = config_.n_embd, NH = config_.n_head, Vp = config_.padded_vocab_size();
  const GeluKind gelu = config_.gelu_kind();
  KvCache& s = cache;

  cpu::encoder_forward(s.x, &token, w_.wte, w_.wpe + static_cast<int64_t>(pos) * C, 1, 1, C);
  for (int l = 0; l < config_.n_layer; ++l) {
    const BlockWeights& bw = w_.h[l];
    float* krow = s.k(l) + static_cast<int64_t>(pos) * C;  // (C) this token's key
    float* vrow = s.v(l) + static_cast<int64_t>(pos) * C;  // (C) this token's value
    cpu::layernorm_forward(s.ln, s.mean, s.rstd, s.x, bw.ln1w, bw.ln1b, 1, C);
    cpu::matmul_forward(ctx, s.qkv, s.ln, bw.qkvw, bw.qkvb, 1, C, 3 * C);  // (3C) [q | k | v]
    std::memcpy(krow, s.qkv + C, sizeof(float) * C);
    std::memcpy(vrow, s.qkv + 2 * C, sizeof(float) * C);
    cpu::attention_decode(s.atty, s.qkv, s.k(l), s.v(l), pos + 1, C, NH);
    cpu::matmul_forward(ctx, s.proj, s.atty, bw.attprojw, bw.attprojb, 1, C, C);
    cpu::residual_forward(s.x2, s.x, s.proj, C);
    cpu::layernorm_forward(s.ln, s.mean, s.rstd, s.x2, bw.ln2w, bw.ln2b, 1, C);
    cpu::matmul_forward(ctx, s.fch, s.ln, bw.fcw, bw.fcb, 1, C, 4 * C);
    cpu::gelu_forward(s.fch_gelu, s.fch, 4 * C, gelu);
    cpu::matmul_forward(ctx, s.proj, s.fch_gelu, bw.fcprojw, bw.fcprojb, 1, 4 * C, C);
    cpu::residual_forward(s.x, s.x2, s.proj, C);
  }
  cpu::layernorm_forward(s.ln, s.mean, s.rstd, s.x, w_.lnfw, w_.lnfb, 1, C);
  cpu::matmul_forward(ctx, logits_out, s.ln, w_.wte, nullptr, 1, C, Vp);  // (Vp)
  cache.set_length(pos + 1);
}

}  // namespace nanogpt
