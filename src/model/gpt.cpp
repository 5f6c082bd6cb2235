// GPT forward, backward and one-token decoding as sequences of kernel calls (see gpt.h).
// Block:  x -> ln1 -> qkv -> [qk-norm] -> [rotary] -> attention -> attproj -> [dropout]
//           -> residual2 = x + . -> ln2 -> fc -> gelu/relu2 -> fcproj -> [dropout]
//           -> residual3 = residual2 + .
// U-net skips (unet_skips): the last n_layer/2 blocks' inputs get the first n_layer/2 blocks'
// outputs added in mirror order, each times a learned weight (skip_input = x + w * source).
// The attention branch's learned gain (attn_gain): residual2 = x + gain * branch (the fused
// residual + norm with a branch weight); its backward recovers the branch as (residual2 - x) /
// gain. Head:   lnf -> logits = lnf . wte^T (tied, or lm_head^T) -> [soft-cap] -> cross-entropy
// over the
//         first V columns, in chunks of rows, fused with its backward in training (the (N, Vp)
//         logits are never held).
// What each step is (LayerNorm or RMSNorm, learned or rotary positions, GELU or ReLU², ...) is
// arch_'s (model/architecture.h), read here, never decided here.
// Kernel choices (kernel_choices.h): fused=True also runs each residual add in one pass with the
// LayerNorm it feeds (and, with fused_mlp or where the backend fuses them in one region, the GELU
// in the fc matmul's epilogue and its derivative in the epilogue of the backward matmul that
// produces d(gelu)); fused=False runs the plain ops and
// the classifier over all rows at once;
// attention=naive keeps the (B, NH, T, T) probabilities instead of lse.
// Memory: a block keeps 10 C floats per row for its backward (activations.h); the LayerNorm and
// GELU outputs are recomputed in the backward, the projections' outputs are never kept.
#include "model/gpt.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/check.h"
#include "core/rng.h"
#include "kernels/backend.h"
#include "model/init.h"

namespace nanogpt {

namespace {

// Dropout sites: embedding output, attention probabilities, attention and MLP residual branches.
enum Site : int { kSiteEmbedding = 0, kSiteAttnProbs = 1, kSiteAttnOut = 2, kSiteMlpOut = 3 };

// The attention gain's backward divides (residual2 - x) by the gain down to this magnitude; below
// it (a gain at or near 0) it computes the branch again instead, where the division would lose
// the branch's digits (residual2 - x keeps those of x's magnitude only).
constexpr float kGainDivideMin = 1e-2f;

}  // namespace

// g (N elements, float32) in the activation dtype: g itself when that is float32 (lowp is null),
// else its rounded copy in `lowp`.
static ConstTypedPtr in_act_dtype(Backend& ops, TypedPtr lowp, const float* g, int64_t n) {
  if (!lowp) return g;
  ops.convert(lowp, g, n);
  return lowp;
}

GPT::GPT(const ModelConfig& config, MemoryTracker* tracker, MasterWeights masters, Backend* memory)
    : config_((config.validate(), config)),
      arch_(Architecture::of(config_)),
      table_(config_),
      tracker_(tracker),
      memory_(memory),
      masters_(masters),
      params_(masters == MasterWeights::kInModel ? static_cast<size_t>(table_.total_numel()) : 0,
              tracker, memory_),
      grads_(static_cast<size_t>(table_.total_numel()), tracker, memory_) {
  if (masters_ == MasterWeights::kInModel) {
    w_ = bind_weights(table_, config_.n_layer, params_.data());
  } else {
    fp32_reads_ = Buffer<float>(static_cast<size_t>(table_.fp32_read_numel()), tracker, memory_);
    w_ = bind_weights(table_, config_.n_layer, fp32_reads_.data(), WeightLayout::kFp32Read);
  }
  g_ = bind_weights(table_, config_.n_layer, grads_.data());
  for (int l = 0; l < config_.n_layer; ++l) {
    block_begin_.push_back(table_.at("h." + std::to_string(l) + ".ln_1.weight").offset);
  }
  block_begin_.push_back(table_.at("ln_f.weight").offset);
  on_host_ = memory_ == nullptr || memory_->host_addressable();
  if (arch_.rotary) {
    rotary_ = RotaryTables(config_.block_size, config_.head_size(), arch_.rope_theta);
    if (!on_host_) {
      const size_t n = rotary_.cos.size();
      rotary_dev_ = Buffer<float>(2 * n, tracker, memory_);
      memory_->upload(rotary_dev_.data(), rotary_.cos.data(), n * sizeof(float));
      memory_->upload(rotary_dev_.data() + n, rotary_.sin.data(), n * sizeof(float));
    }
  }
  decode_rstd_ = Buffer<float>(static_cast<size_t>(2 * config_.n_head), nullptr, memory_);
}

const float* GPT::rotary_cos() const {
  if (!arch_.rotary) return nullptr;
  return on_host_ ? rotary_.cos.data() : rotary_dev_.data();
}
const float* GPT::rotary_sin() const {
  if (!arch_.rotary) return nullptr;
  return on_host_ ? rotary_.sin.data() : rotary_dev_.data() + rotary_.cos.size();
}

float GPT::scalar(Backend& ops, const float* p) const {
  if (on_host_) return *p;
  float v = 0.0f;
  ops.download(&v, p, sizeof v);
  return v;
}

void GPT::add_to_scalar(Backend& ops, float* p, float v) const {
  if (on_host_) {
    *p += v;
    return;
  }
  float x = 0.0f;
  ops.download(&x, p, sizeof x);
  x += v;
  ops.upload(p, &x, sizeof x);
}

const int* GPT::stage_tokens(Backend& ops, const int* host, int64_t n, int64_t offset,
                             int64_t rows) {
  if (on_host_ || host == nullptr) return host;
  if (tokens_.size() < static_cast<size_t>(2 * rows)) {
    tokens_ = Buffer<int>();
    tokens_ = Buffer<int>(static_cast<size_t>(2 * rows), nullptr, memory_);
  }
  ops.upload(tokens_.data() + offset, host, static_cast<size_t>(n) * sizeof(int));
  return tokens_.data() + offset;
}

void GPT::qk_forward(Backend& ops, TypedPtr qkv, float* rstd, int64_t N, int T, int pos0) {
  if (!arch_.qk_norm && !arch_.rotary) return;
  // One pass over Q and K: QK-norm then rotary, each head vector rounded once.
  ops.qk_norm_rotary_forward(qkv, arch_.qk_norm ? rstd : nullptr, rotary_cos(), rotary_sin(), N,
                             T, pos0,
                             config_.n_embd, config_.n_head, arch_.qk_norm_gain);
}

void GPT::qk_backward(Backend& ops, TypedPtr dqkv, ConstTypedPtr qkv, const float* rstd, int64_t N,
                      int T) {
  if (!arch_.qk_norm && !arch_.rotary) return;
  // qkv holds the rotated output: QK-norm's backward runs in that frame first (ops_arch.h).
  ops.qk_norm_rotary_backward(dqkv, qkv, arch_.qk_norm ? rstd : nullptr, rotary_cos(),
                              rotary_sin(), N, T, 0, config_.n_embd, config_.n_head,
                              arch_.qk_norm_gain);
}

void GPT::check_masters_inside(const char* what) const {
  CHECK(masters_ == MasterWeights::kInModel,
        "GPT::{}: this model holds no float32 master weights (MasterWeights::kOutside, ZeRO-1 in "
        "mixed precision: each rank holds its shard of them)",
        what);
}

void GPT::check_backend(const Backend& ops, const char* what) const {
  const MemorySpace* here = memory_;
  // Host memory is one space, whichever CpuBackend allocated it.
  CHECK(here == &ops || (ops.host_addressable() && (here == nullptr || here->host_addressable())),
        "GPT::{}: the model's arenas live in {} memory, but the backend given computes in {}: "
        "pass the backend the model was made with",
        what, memory_ ? memory_->memory_name() : "host", ops.memory_name());
}

void GPT::init_weights(uint64_t seed) {
  check_masters_inside("init_weights");
  if (on_host_) {
    nanogpt::init_weights(table_, params_.data(), seed);
  } else {  // the same values, made on the host
    std::vector<float> host(params_.size());
    nanogpt::init_weights(table_, host.data(), seed);
    memory_->upload(params_.data(), host.data(), host.size() * sizeof(float));
  }
  lowp_stale_ = true;
}

void GPT::set_dtype(DType dtype) {
  CHECK(masters_ == MasterWeights::kInModel || dtype != DType::kF32,
        "GPT::set_dtype: master weights held outside the model need a 16-bit dtype (bfloat16 or "
        "float16); float32 runs read the masters themselves");
  dtype_ = dtype;
  params_lowp_ = Buffer<uint16_t>();
  lw_ = LowpModelWeights();
  if (dtype != DType::kF32) {
    params_lowp_ = Buffer<uint16_t>(static_cast<size_t>(table_.total_numel()), tracker_, memory_);
    lw_ = bind_lowp_weights(table_, config_.n_layer, params_lowp_.data());
  }
  lowp_stale_ = masters_ == MasterWeights::kInModel;
}

void GPT::set_weights_range(Backend& ops, const float* master, int64_t begin, int64_t end) {
  CHECK(masters_ == MasterWeights::kOutside && dtype_ != DType::kF32,
        "GPT::set_weights_range: only for master weights held outside the model (after "
        "set_dtype to a 16-bit dtype)");
  CHECK(0 <= begin && begin <= end && end <= table_.total_numel(),
        "GPT::set_weights_range: [{}, {}) is not inside the arena of {} elements", begin, end,
        table_.total_numel());
  ProfileScope profiled(ops, profile_);
  ops.convert({params_lowp_.data() + begin, dtype_}, master, end - begin);
  for (const ParamSpec& s : table_.specs()) {
    if (s.lowp_only) continue;
    const int64_t slot_end = s.offset + (s.numel + 15) / 16 * 16;
    const int64_t lo = std::max(begin, s.offset), hi = std::min(end, slot_end);
    if (lo >= hi) continue;
    ops.copy_bytes(fp32_reads_.data() + s.fp32_read_offset + (lo - s.offset), master + (lo - begin),
                   static_cast<size_t>(hi - lo) * sizeof(float));
  }
}

ConstTypedPtr GPT::lowp(const float* w32, const uint16_t* w16) const {
  if (dtype_ == DType::kF32) return w32;
  return {w16, dtype_};
}

void GPT::refresh_lowp_weights(Backend& ops) {
  if (masters_ == MasterWeights::kOutside) return;  // set by set_weights_range
  if (dtype_ != DType::kF32 && lowp_stale_) {
    ProfileScope profiled(ops, profile_);
    ops.convert({params_lowp_.data(), dtype_}, params_.data(), table_.total_numel());
  }
  lowp_stale_ = false;
}

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
        "GPT::logits(): no logits; the last forward had targets (its classifier runs in chunks "
        "and keeps no logits) or none ran. Run forward with targets = nullptr.");
  return full_logits_.data();
}

// fused=True runs the MLP's fused ops with fused_mlp, and without it where the backend runs them as
// one region each (float32 at nanoGPT's CPU recipe's size: there they save regions and passes).
void GPT::set_kernel_choices(const KernelChoices& choices) {
  CHECK(choices.recompute >= 0 && choices.recompute <= 2,
        "recompute = {}: expected 0 (keep each block's LayerNorm and GELU outputs), 1 (recompute "
        "the GELU) or 2 (recompute both, the least memory)",
        choices.recompute);
  CHECK(!choices.checkpoint_blocks || choices.recompute == 2,
        "recompute = {} keeps what activation checkpointing recomputes: use "
        "activation_checkpointing=False or recompute=2",
        choices.recompute);
  choices_ = choices;
}

bool GPT::fuse_mlp(const Backend& ops, int64_t N) const {
  const int C = config_.n_embd;
  return choices_.fused && (choices_.fused_mlp || ops.mlp_fusion_one_region(dtype_, N, C, 4 * C));
}

int GPT::skip_into(int l) const {
  return arch_.unet_skips ? unet_skip_into(config_.n_layer, l) : -1;
}

// Where block l's LayerNorm and GELU outputs are written and read: the layer's own views when it
// keeps them (KernelChoices::recompute), else the working buffers the backward refills.
TypedPtr GPT::ln1_out(int l) const { return acts_.layers[l].ln1 ? acts_.layers[l].ln1 : acts_.ln; }
TypedPtr GPT::ln2_out(int l) const { return acts_.layers[l].ln2 ? acts_.layers[l].ln2 : acts_.ln; }
TypedPtr GPT::gelu_out(int l) const {
  return acts_.layers[l].fch_gelu ? acts_.layers[l].fch_gelu : acts_.fch_gelu;
}

const float* GPT::block_input(int l) const {
  if (l == 0) return acts_.encoded;
  const LayerActivations& la = acts_.layers[l];
  return la.skip_input ? la.skip_input : acts_.layers[l - 1].residual3;
}

void GPT::make_skip_input(Backend& ops, int l) {
  const int i = skip_into(l);
  const int64_t N = static_cast<int64_t>(B_) * T_;
  const float* source = acts_.layers[unet_skip_from(config_.n_layer, i)].residual3;
  ops.skip_forward(acts_.layers[l].skip_input, acts_.layers[l - 1].residual3, source,
                   scalar(ops, w_.skipw + i), N * config_.n_embd);
}

// Block l's forward from its input x (the embedding or block l-1's residual3) into a.layers[l];
// ln1_done: a.ln and layer l's ln1 statistics already hold ln1(x) (the previous block's fused
// residual + LayerNorm wrote them). Run by forward for every block and, with block checkpointing,
// by backward again just before the block's backward (for_backward: only as far as the backward
// reads, up to the fc matmul).
// fused: each residual add runs in one pass with the LayerNorm it feeds (ln2; the next block's
// ln1, or lnf), so a.ln already holds ln1(x) when a block starts (except the first). The
// residual stream stays float32; the LayerNorm output is in the activation dtype.
void GPT::forward_block(Backend& ops, int l, const float* x, bool ln1_done, bool for_backward) {
  const int B = B_, T = T_;
  const int64_t N = static_cast<int64_t>(B) * T;
  const int C = config_.n_embd, NH = config_.n_head;
  const MlpActivation gelu = arch_.activation;
  const NormKind norm = arch_.norm;
  const float p = dropout_p_;
  const bool drop = p > 0.0f;
  const bool fuse_res_ln = choices_.fused;
  const int64_t att_size = static_cast<int64_t>(B) * NH * T * T;  // attention=naive, per layer
  Activations& a = acts_;
  const BlockWeights& bw = w_.h[l];
  const TypedPtr ln2 = ln2_out(l);  // ln_2's output: the layer's own, or the working buffer
  const LowpBlockWeights lbw = lw_.h.empty() ? LowpBlockWeights{} : lw_.h[l];
  LayerActivations& la = a.layers[l];
  if (!ln1_done) {
    ops.layernorm_forward(ln1_out(l), la.ln1_mean, la.ln1_rstd, x, bw.ln1w, bw.ln1b, N, C, norm);
  }
  ops.matmul_forward(la.qkv, ln1_out(l), lowp(bw.qkvw, lbw.qkvw), bw.qkvb, N, C, 3 * C);  // (N, 3C)
  qk_forward(ops, la.qkv, la.qk_rstd, N, T, 0);
  if (choices_.naive_attention) {
    ops.attention_naive_forward(la.atty.f32(), naive_att_.data() + l * att_size, la.qkv.f32(), B, T,
                                C, NH, attn_dropout_p_, site_seed(l, kSiteAttnProbs));
  } else {
    ops.attention_forward(la.atty, la.lse, la.qkv, B, T, C, NH, attn_dropout_p_,
                          site_seed(l, kSiteAttnProbs));
  }
  ops.matmul_forward(a.branch, la.atty, lowp(bw.attprojw, lbw.attprojw), bw.attprojb, N, C, C);
  if (drop) ops.dropout_forward(a.branch, a.branch, N * C, p, site_seed(l, kSiteAttnOut));
  const float* attn_out = a.branch;
  if (fuse_res_ln) {  // residual2 = x + gain * branch (gain 1 without attn_gain), then ln_2
    ops.residual_layernorm_forward(la.residual2, ln2, la.ln2_mean, la.ln2_rstd, x, attn_out,
                                   bw.ln2w, bw.ln2b, N, C, norm,
                                   bw.attn_gain ? scalar(ops, bw.attn_gain) : 1.0f);
  } else if (bw.attn_gain) {
    ops.skip_forward(la.residual2, x, attn_out, scalar(ops, bw.attn_gain), N * C);
    ops.layernorm_forward(ln2, la.ln2_mean, la.ln2_rstd, la.residual2, bw.ln2w, bw.ln2b, N, C,
                          norm);
  } else {
    ops.residual_forward(la.residual2, x, attn_out, N * C);
    ops.layernorm_forward(ln2, la.ln2_mean, la.ln2_rstd, la.residual2, bw.ln2w, bw.ln2b, N, C,
                          norm);
  }
  if (fuse_mlp(ops, N) && !for_backward) {  // GELU in the fc matmul's epilogue
    ops.matmul_gelu_forward(la.fch, gelu_out(l), ln2, lowp(bw.fcw, lbw.fcw), bw.fcb, N, C, 4 * C,
                            gelu);
  } else {
    ops.matmul_forward(la.fch, ln2, lowp(bw.fcw, lbw.fcw), bw.fcb, N, C, 4 * C);  // (N, 4C)
    // The backward needs no more: GELU it recomputes itself, the MLP's output and residual3 (kept)
    // it does not read; and the fused tail would overwrite the shared ln1 statistics.
    if (for_backward) return;
    ops.gelu_forward(gelu_out(l), la.fch, N * 4 * C, gelu);
  }
  ops.matmul_forward(a.branch, gelu_out(l), lowp(bw.fcprojw, lbw.fcprojw), bw.fcprojb, N, 4 * C, C);
  if (drop) ops.dropout_forward(a.branch, a.branch, N * C, p, site_seed(l, kSiteMlpOut));
  const float* mlp_out = a.branch;
  // A U-net skip entering the next block: its ln1 reads the skip input, made after this block.
  if (!fuse_res_ln || skip_into(l + 1) >= 0) {
    ops.residual_forward(la.residual3, la.residual2, mlp_out, N * C);
  } else if (l + 1 < config_.n_layer) {  // residual3 -> the next block's ln1
    LayerActivations& next = a.layers[l + 1];
    ops.residual_layernorm_forward(la.residual3, ln1_out(l + 1), next.ln1_mean, next.ln1_rstd,
                                   la.residual2, mlp_out, w_.h[l + 1].ln1w, w_.h[l + 1].ln1b, N, C,
                                   norm);
  } else {  // residual3 -> lnf
    ops.residual_layernorm_forward(la.residual3, a.lnf, a.lnf_mean, a.lnf_rstd, la.residual2,
                                   mlp_out, w_.lnfw, w_.lnfb, N, C, norm);
  }
}

float GPT::forward(Backend& ops, const int* inputs, const int* targets, int B, int T,
                   bool training, uint64_t dropout_seed, float grad_scale) {
  CHECK(B >= 1 && T >= 1 && T <= config_.block_size,
        "GPT::forward: B = {}, T = {}; expected B >= 1 and 1 <= T <= block_size ({})", B, T,
        config_.block_size);
  const int64_t N = static_cast<int64_t>(B) * T;
  const int C = config_.n_embd, V = config_.vocab_size;
  const int Vp = config_.padded_vocab_size();
  check_tokens(inputs, N, false, "inputs");
  if (targets) check_tokens(targets, N, true, "targets");
  // fused=False: the classifier in one pass over all N rows, the (N, Vp) logits materialized.
  const int64_t chunk = choices_.fused ? chunk_rows_override_ : N;
  CHECK(!choices_.naive_attention || dtype_ == DType::kF32,
        "attention = 'naive' runs in float32 only (dtype {}): use --attention=flash or "
        "--dtype=float32", dtype_name(dtype_));
  check_backend(ops, "forward");
  acts_.reserve(config_, N, tracker_, chunk, dtype_, choices_.checkpoint_blocks,
                choices_.recompute, memory_);
  refresh_lowp_weights(ops);
  inputs_.assign(inputs, inputs + N);
  B_ = B, T_ = T;
  dropout_seed_ = dropout_seed;
  dropout_p_ = training ? static_cast<float>(config_.dropout) : 0.0f;
  attn_dropout_p_ = training ? static_cast<float>(config_.attention_dropout()) : 0.0f;
  const float p = dropout_p_;
  const bool drop = p > 0.0f;
  Activations& a = acts_;
  ProfileScope profiled(ops, profile_);
  const int64_t att_all = naive_attention_floats(config_, B, T);
  if (choices_.naive_attention && naive_att_.size() < static_cast<size_t>(att_all)) {
    naive_att_ = Buffer<float>();
    naive_att_ = Buffer<float>(static_cast<size_t>(att_all), tracker_, memory_);
  }

  // The token ids where the ops read them (the host's, or staged in the backend's memory).
  const int* inp = stage_tokens(ops, inputs, N, 0, N);
  const int* tgt = stage_tokens(ops, targets, N, N, N);
  ops.encoder_forward(a.encoded, inp, w_.wte, w_.wpe, B, T, C);  // (N, C)
  if (drop) ops.dropout_forward(a.encoded, a.encoded, N * C, p, site_seed(-1, kSiteEmbedding));
  const float* x = a.encoded;
  const bool fuse_res_ln = choices_.fused;
  for (int l = 0; l < config_.n_layer; ++l) {
    const bool skip = skip_into(l) >= 0;
    if (skip) make_skip_input(ops, l);
    forward_block(ops, l, block_input(l), /*ln1_done=*/l > 0 && fuse_res_ln && !skip,
                  /*for_backward=*/false);
    x = a.layers[l].residual3;
  }
  if (!fuse_res_ln || config_.n_layer == 0) {
    ops.layernorm_forward(a.lnf, a.lnf_mean, a.lnf_rstd, x, w_.lnfw, w_.lnfb, N, C, arch_.norm);
  }

  backward_ready_ = false;
  logits_valid_ = false;
  num_valid_ = 0;
  const MatmulClassScope head_class(ops, OpClass::kClassifier);  // the head's matmuls
  Backend& head = ops;
  const float cap = arch_.logit_softcap;
  if (!targets) {
    if (full_logits_.size() < static_cast<size_t>(N * Vp)) {
      full_logits_ = Buffer<float>();
      full_logits_ = Buffer<float>(static_cast<size_t>(N * Vp), tracker_, memory_);
    }
    // (N, Vp)
    head.matmul_forward(full_logits_.data(), a.lnf, lowp(w_.head, lw_.head), nullptr, N, C, Vp);
    if (cap > 0.0f) head.softcap_forward(full_logits_.data(), N * Vp, cap);
    logits_valid_ = true;
    return 0.0f;
  }
  for (int64_t i = 0; i < N; ++i) num_valid_ += targets[i] != -1;
  const float dloss = num_valid_ > 0 ? grad_scale / static_cast<float>(num_valid_) : 0.0f;
  if (training) ops.fill_zero(a.dlnf, N * C);
  const int64_t step = chunk > 0 ? std::min(chunk, a.chunk_rows) : a.chunk_rows;
  for (int64_t r0 = 0; r0 < N; r0 += step) {  // the head, chunk by chunk
    const int64_t rows = std::min(step, N - r0);
    const ConstTypedPtr lnf_rows = a.lnf.at(r0 * C);  // (rows, C)
    float* z = a.logits_chunk;                         // (rows, Vp)
    head.matmul_forward(z, lnf_rows, lowp(w_.head, lw_.head), nullptr, rows, C, Vp);
    if (!training) {
      if (cap > 0.0f) head.softcap_forward(z, rows * Vp, cap);
      ops.crossentropy_forward(a.losses + r0, z, tgt + r0, rows, V, Vp);
      continue;
    }
    // dlogits overwrite the chunk's logits; dlnf = dlogits . head, dhead += dlogits^T . lnf.
    if (cap > 0.0f) {
      head.crossentropy_softcap_forward_backward(a.losses + r0, z, z, tgt + r0, dloss, rows, V, Vp,
                                                 cap);
    } else {
      ops.crossentropy_forward_backward(a.losses + r0, z, z, tgt + r0, dloss, rows, V, Vp);
    }
    const TypedPtr dz = a.dlogits_chunk;  // (rows, Vp) in the activation dtype
    if (dz.data != z) ops.convert(dz, z, rows * Vp);
    head.matmul_backward(a.dlnf + r0 * C, g_.head, nullptr, dz, lnf_rows, lowp(w_.head, lw_.head),
                         rows, C, Vp);
  }
  backward_ready_ = training;
  const float* losses = a.losses;  // (N), read on the host
  std::vector<float> downloaded;
  if (!on_host_) {
    downloaded.resize(static_cast<size_t>(N));
    ops.download(downloaded.data(), a.losses, downloaded.size() * sizeof(float));
    losses = downloaded.data();
  }
  double sum = 0.0;
  for (int64_t i = 0; i < N; ++i) sum += losses[i];
  return num_valid_ > 0 ? static_cast<float>(sum / static_cast<double>(num_valid_)) : 0.0f;
}

void GPT::backward(Backend& ops) {
  CHECK(backward_ready_,
        "GPT::backward: needs a preceding forward with targets and training=true (and runs at "
        "most once per forward)");
  backward_ready_ = false;
  const int B = B_, T = T_;
  const int64_t N = static_cast<int64_t>(B) * T;
  const int C = config_.n_embd, NH = config_.n_head;
  const MlpActivation gelu = arch_.activation;
  const NormKind norm = arch_.norm;
  const float p = dropout_p_;
  const bool drop = p > 0.0f;
  check_backend(ops, "backward");
  scratch_.reserve(config_, N, tracker_, dtype_, memory_);
  Activations& a = acts_;
  GradScratch& s = scratch_;
  ProfileScope profiled(ops, profile_);
  const int64_t att_size = static_cast<int64_t>(B) * NH * T * T;  // attention=naive, per layer
  const float* x_last = a.layers.back().residual3;

  // Head: the fused classifier in forward already added its dwte and left dlnf (both scaled by the
  // forward's grad_scale, and so is every gradient below, through dlnf).
  ops.fill_zero(s.dresidual, N * C);
  ops.layernorm_backward(s.dresidual, g_.lnfw, g_.lnfb, a.dlnf, x_last, w_.lnfw, a.lnf_mean,
                         a.lnf_rstd, N, C, norm);
  const int L = config_.n_layer;
  if (grad_ready_) grad_ready_(block_begin_[L], table_.total_numel());

  // Blocks in reverse. s.dresidual holds d(residual3); the identity path of each residual add is
  // kept by accumulating the branch's input gradient into it (so it becomes d(residual2), d(x)).
  for (int l = config_.n_layer - 1; l >= 0; --l) {
    const BlockWeights& bw = w_.h[l];
    const LowpBlockWeights lbw = lw_.h.empty() ? LowpBlockWeights{} : lw_.h[l];
    BlockWeights& bg = g_.h[l];
    LayerActivations& la = a.layers[l];
    const float* x = block_input(l);
    // A U-net skip's source: its share of the gradient joins the stream (unet_skips).
    for (size_t i = 0; i < s.dskip.size(); ++i) {
      if (unet_skip_from(config_.n_layer, static_cast<int>(i)) == l) {
        ops.skip_forward(s.dresidual, s.dresidual, s.dskip[i], 1.0f, N * C);
      }
    }
    // Block checkpointing: the views of la are shared by all blocks; fill them again with this
    // block's forward (same code, same input, same dropout masks: the same values).
    if (choices_.checkpoint_blocks) {
      forward_block(ops, l, x, /*ln1_done=*/false, /*for_backward=*/true);
    }

    const float* dmlp_out = s.dresidual;
    if (drop) {
      ops.dropout_backward_overwrite(s.ddrop, s.dresidual, N * C, p, site_seed(l, kSiteMlpOut));
      dmlp_out = s.ddrop;
    }
    const ConstTypedPtr dmlp = in_act_dtype(ops, s.dbranch, dmlp_out, N * C);
    // d(fch) goes to the GELU output's buffer: it is dead once fcproj's backward has read it.
    const TypedPtr dfch = gelu_out(l);
    if (fuse_mlp(ops, N)) {  // GELU recomputed by blocks, derivative in epilogue
      ops.gelu_matmul_backward(dfch, bg.fcprojw, bg.fcprojb, dmlp, la.fch,
                               lowp(bw.fcprojw, lbw.fcprojw), N, 4 * C, C, gelu);
    } else {
      if (!la.fch_gelu) ops.gelu_forward(a.fch_gelu, la.fch, N * 4 * C, gelu);  // recomputed
      ops.matmul_backward_overwrite(s.dfch_gelu, bg.fcprojw, bg.fcprojb, dmlp, gelu_out(l),
                                    lowp(bw.fcprojw, lbw.fcprojw), N, 4 * C, C);
      ops.gelu_backward_overwrite(dfch, la.fch, s.dfch_gelu, N * 4 * C, gelu);
    }
    // ln2 recomputed from residual2 unless kept (its mean and rstd come out as saved: same code,
    // same input).
    if (!la.ln2) {
      ops.layernorm_forward(a.ln, la.ln2_mean, la.ln2_rstd, la.residual2, bw.ln2w, bw.ln2b, N, C,
                            norm);
    }
    ops.matmul_backward_overwrite(s.dc, bg.fcw, bg.fcb, dfch, ln2_out(l), lowp(bw.fcw, lbw.fcw), N,
                                  C, 4 * C);
    ops.layernorm_backward(s.dresidual, bg.ln2w, bg.ln2b, s.dc, la.residual2, bw.ln2w, la.ln2_mean,
                           la.ln2_rstd, N, C, norm);

    const float* dattn_out = s.dresidual;
    if (bw.attn_gain) {
      // d(gain) = sum(d(residual2) * branch); the branch's gradient, gain * d(residual2), goes to
      // a.branch (the forward's scratch), where the branch is first recovered: (residual2 - x) /
      // gain, or computed again from atty when the gain is too small to divide by.
      const float gain = scalar(ops, bw.attn_gain);
      float* branch = a.branch;  // (N, C)
      double dgain;
      if (std::abs(gain) >= kGainDivideMin) {
        ops.skip_forward(branch, la.residual2, x, -1.0f, N * C);  // gain * branch
        dgain = ops.skip_backward(branch, s.dresidual, branch, gain, N * C) / gain;
      } else {
        ops.matmul_forward(branch, la.atty, lowp(bw.attprojw, lbw.attprojw), bw.attprojb, N, C, C);
        if (drop) ops.dropout_forward(branch, branch, N * C, p, site_seed(l, kSiteAttnOut));
        dgain = ops.skip_backward(branch, s.dresidual, branch, gain, N * C);
      }
      add_to_scalar(ops, bg.attn_gain, static_cast<float>(dgain));
      dattn_out = branch;
    }
    if (drop) {
      ops.dropout_backward_overwrite(s.ddrop, dattn_out, N * C, p, site_seed(l, kSiteAttnOut));
      dattn_out = s.ddrop;
    }
    const ConstTypedPtr dattn = in_act_dtype(ops, s.dbranch, dattn_out, N * C);
    // s.dc = d(atty), overwritten (no zero-fill first).
    ops.matmul_backward_overwrite(s.dc, bg.attprojw, bg.attprojb, dattn, la.atty,
                                  lowp(bw.attprojw, lbw.attprojw), N, C, C);
    ops.fill_zero(s.dqkv, N * 3 * C);
    if (choices_.naive_attention) {
      ops.attention_naive_backward(s.dqkv.f32(), s.dc.f32(), naive_att_.data() + l * att_size,
                                   la.qkv.f32(), B, T, C, NH, attn_dropout_p_,
                                   site_seed(l, kSiteAttnProbs));
    } else {
      ops.attention_backward(s.dqkv, s.dc, la.atty, la.lse, la.qkv, B, T, C, NH, attn_dropout_p_,
                             site_seed(l, kSiteAttnProbs));
    }
    qk_backward(ops, s.dqkv, la.qkv, la.qk_rstd, N, T);
    if (!la.ln1) {  // again, unless kept
      ops.layernorm_forward(a.ln, la.ln1_mean, la.ln1_rstd, x, bw.ln1w, bw.ln1b, N, C, norm);
    }
    ops.matmul_backward_overwrite(s.dc, bg.qkvw, bg.qkvb, s.dqkv, ln1_out(l),
                                  lowp(bw.qkvw, lbw.qkvw), N, C, 3 * C);  // s.dc = d(ln1)
    ops.layernorm_backward(s.dresidual, bg.ln1w, bg.ln1b, s.dc, x, bw.ln1w, la.ln1_mean,
                           la.ln1_rstd, N, C, norm);
    // s.dresidual = d(x): the previous block's output gets it whole; a U-net skip entering here
    // its weight's gradient and (in s.dskip) its source's share.
    if (const int i = skip_into(l); i >= 0) {
      const float* source = a.layers[unet_skip_from(config_.n_layer, i)].residual3;
      add_to_scalar(ops, g_.skipw + i,
                    static_cast<float>(ops.skip_backward(s.dskip[i], s.dresidual, source,
                                                         scalar(ops, w_.skipw + i), N * C)));
    }
    if (grad_ready_) grad_ready_(block_begin_[l], block_begin_[l + 1]);
  }

  const float* demb = s.dresidual;
  if (drop) {
    ops.dropout_backward_overwrite(s.ddrop, s.dresidual, N * C, p, site_seed(-1, kSiteEmbedding));
    demb = s.ddrop;
  }
  ops.encoder_backward(g_.wte, g_.wpe, demb, on_host_ ? inputs_.data() : tokens_.data(), B, T, C);
  if (grad_ready_) grad_ready_(0, block_begin_[0]);
}

void GPT::forward_one(Backend& ops, KvCache& cache, int token, int pos, float* logits_out) {
  CHECK(pos >= 0 && pos < cache.max_T() && pos <= cache.length(),
        "GPT::forward_one: pos {} must be in 0..{} (cache holds {} positions, max {})", pos,
        std::min(cache.length(), cache.max_T() - 1), cache.length(), cache.max_T());
  check_masters_inside("forward_one");
  check_tokens(&token, 1, false, "token");
  const int C = config_.n_embd, NH = config_.n_head, Vp = config_.padded_vocab_size();
  const MlpActivation gelu = arch_.activation;
  const NormKind norm = arch_.norm;
  KvCache& s = cache;
  check_backend(ops, "forward_one");
  ProfileScope profiled(ops, profile_);

  ops.encoder_forward(s.x, stage_tokens(ops, &token, 1, 0, 1), w_.wte,
                      w_.wpe ? w_.wpe + static_cast<int64_t>(pos) * C : nullptr, 1, 1, C);
  for (int l = 0; l < config_.n_layer; ++l) {
    const BlockWeights& bw = w_.h[l];
    if (const int i = skip_into(l); i >= 0) {  // U-net skip: the source's output was kept
      const int64_t from = unet_skip_from(config_.n_layer, i);
      ops.skip_forward(s.x, s.x, s.skips + from * C, scalar(ops, w_.skipw + i), C);
    }
    float* krow = s.k(l) + static_cast<int64_t>(pos) * C;  // (C) this token's key
    float* vrow = s.v(l) + static_cast<int64_t>(pos) * C;  // (C) this token's value
    ops.layernorm_forward(s.ln, s.mean, s.rstd, s.x, bw.ln1w, bw.ln1b, 1, C, norm);
    ops.matmul_forward(s.qkv, s.ln, bw.qkvw, bw.qkvb, 1, C, 3 * C);  // (3C) [q | k | v]
    qk_forward(ops, s.qkv, decode_rstd_.data(), 1, 1, pos);
    ops.copy_bytes(krow, s.qkv + C, sizeof(float) * C);
    ops.copy_bytes(vrow, s.qkv + 2 * C, sizeof(float) * C);
    ops.attention_decode(s.atty, s.qkv, s.k(l), s.v(l), pos + 1, C, NH);
    ops.matmul_forward(s.proj, s.atty, bw.attprojw, bw.attprojb, 1, C, C);
    if (bw.attn_gain) {
      ops.skip_forward(s.x2, s.x, s.proj, scalar(ops, bw.attn_gain), C);
    } else {
      ops.residual_forward(s.x2, s.x, s.proj, C);
    }
    ops.layernorm_forward(s.ln, s.mean, s.rstd, s.x2, bw.ln2w, bw.ln2b, 1, C, norm);
    ops.matmul_forward(s.fch, s.ln, bw.fcw, bw.fcb, 1, C, 4 * C);
    ops.gelu_forward(s.fch_gelu, s.fch, 4 * C, gelu);
    ops.matmul_forward(s.proj, s.fch_gelu, bw.fcprojw, bw.fcprojb, 1, 4 * C, C);
    ops.residual_forward(s.x, s.x2, s.proj, C);
    if (arch_.unet_skips && l < unet_skip_count(config_.n_layer)) {
      ops.copy_bytes(s.skips + static_cast<int64_t>(l) * C, s.x, sizeof(float) * C);
    }
  }
  ops.layernorm_forward(s.ln, s.mean, s.rstd, s.x, w_.lnfw, w_.lnfb, 1, C, norm);
  const MatmulClassScope head_class(ops, OpClass::kClassifier);  // the head's matmuls
  Backend& head = ops;
  // (Vp), written where the ops write (the host's logits_out, or the backend's memory first)
  float* logits = logits_out;
  if (!on_host_) {
    if (decode_logits_.size() < static_cast<size_t>(Vp)) {
      decode_logits_ = Buffer<float>(static_cast<size_t>(Vp), nullptr, memory_);
    }
    logits = decode_logits_.data();
  }
  head.matmul_forward(logits, s.ln, w_.head, nullptr, 1, C, Vp);
  if (arch_.logit_softcap > 0.0f) head.softcap_forward(logits, Vp, arch_.logit_softcap);
  if (!on_host_) ops.download(logits_out, logits, static_cast<size_t>(Vp) * sizeof(float));
  cache.set_length(pos + 1);
}

}  // namespace nanogpt
