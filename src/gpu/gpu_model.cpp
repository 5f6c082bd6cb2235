// GpuGpt (gpu_model.h): allocation from the parameter table and the batch shape, and the forward /
// backward / AdamW step as a screen of device-op calls per block (kernels/cuda/ops_cuda.h).
// Block:  x -> ln1 -> qkv -> attention -> attproj -> [dropout] -> res2 = x + . -> ln2 -> fc
//           -> gelu/relu2 -> fcproj -> [dropout] -> res3 = res2 + .
#include "gpu/gpu_model.h"

#include <cmath>

#include "core/check.h"
#include "core/rng.h"
#include "kernels/cuda/ops_cuda.h"

namespace nanogpt {

namespace {

// The dropout sites of the CPU model (model/gpt.cpp), so both draw the same masks.
enum Site : int { kSiteEmbedding = 0, kSiteAttnProbs = 1, kSiteAttnOut = 2, kSiteMlpOut = 3 };

}  // namespace

void require_gpu_architecture(const ModelConfig& config) {
  const Architecture a = Architecture::of(config);
  const char* missing = a.rotary          ? "position = 'rotary'"
                        : a.qk_norm       ? "qk_norm = True"
                        : a.logit_softcap > 0 ? "logit_softcap > 0"
                                              : nullptr;
  CHECK(missing == nullptr,
        "--device=cuda does not run {} yet (the GPU model has GPT-2's learned positions, "
        "LayerNorm or RMSNorm, GELU or ReLU², tied or untied head); train this model on the CPU "
        "with --device=cpu",
        missing ? missing : "");
}

GpuMemoryPlan plan_gpu_memory(const ModelConfig& config, DType dtype, int B, int T) {
  const ParamTable table(config);
  const int64_t P = table.total_numel();
  const int64_t N = int64_t{B} * T, C = config.n_embd, L = config.n_layer, NH = config.n_head;
  const int64_t Vp = config.padded_vocab_size();
  const int64_t e = static_cast<int64_t>(dtype_size(dtype));
  GpuMemoryPlan p;
  p.params = 4 * P + (dtype == DType::kF32 ? 0 : 2 * P);
  p.grads = 4 * P;
  p.optimizer = 8 * P;
  // Per layer: ln1, qkv, atty, ln2 (C + 3C + C + C), fch and its activation (8C) in the act dtype,
  // att (NH T T per sequence), res2 and res3 in float32, 4 statistics.
  const int64_t per_layer = N * (14 * C) * e + int64_t{B} * NH * T * T * e + N * 2 * C * 4 + N * 16;
  p.activations = L * per_layer + N * C * 4 /*encoded*/ + N * C * e /*lnf*/ + N * 12 + N * 8;
  p.classifier = N * Vp * (4 + e);
  // proj, dres (float32), the gradient temporaries (C, C, 3C, 4C in the act dtype), attention's
  // scratch (q, k, v, y and their gradients, a dropped att and its gradient).
  p.scratch = N * C * 8 + N * 9 * C * e + 8 * N * C * e + 2 * int64_t{B} * NH * T * T * e;
  return p;
}

GpuGpt::GpuGpt(cuda::CudaContext& ctx, const ModelConfig& config, DType dtype, int B, int T)
    : ctx_(ctx),
      config_(config),
      arch_(Architecture::of(config)),
      table_(config),
      dtype_(dtype),
      maxB_(B),
      maxT_(T) {
  require_gpu_architecture(config);
  CHECK(dtype == DType::kF32 || dtype == DType::kBF16,
        "--device=cuda trains in float32 or bfloat16, not {} (use --dtype=bfloat16)",
        dtype_name(dtype));
  CHECK(T <= config.block_size, "block of {} tokens exceeds the model's block_size {}", T,
        config.block_size);
  const int64_t P = table_.total_numel();
  const int64_t N = int64_t{B} * T, C = config.n_embd, NH = config.n_head;
  const int64_t Vp = config.padded_vocab_size();
  params_ = cuda::DeviceBuffer<float>(P, "the parameters");
  grads_ = cuda::DeviceBuffer<float>(P, "the gradients");
  m_ = cuda::DeviceBuffer<float>(P, "AdamW's first moment");
  v_ = cuda::DeviceBuffer<float>(P, "AdamW's second moment");
  grads_.zero();
  m_.zero();
  v_.zero();
  if (dtype_ != DType::kF32) params_h_ = cuda::DeviceBuffer<uint16_t>(P, "the bfloat16 weights");
  w_ = bind_weights(table_, config.n_layer, params_.data());
  g_ = bind_weights(table_, config.n_layer, grads_.data());
  if (dtype_ != DType::kF32) lw_ = bind_lowp_weights(table_, config.n_layer, params_h_.data());

  layers_.resize(config.n_layer);
  for (Layer& l : layers_) {
    l.ln1_mean = cuda::DeviceBuffer<float>(N, "activations");
    l.ln1_rstd = cuda::DeviceBuffer<float>(N, "activations");
    l.ln2_mean = cuda::DeviceBuffer<float>(N, "activations");
    l.ln2_rstd = cuda::DeviceBuffer<float>(N, "activations");
    alloc_act(l.ln1_h, l.ln1_f, N * C, "activations (ln1)");
    alloc_act(l.qkv_h, l.qkv_f, N * 3 * C, "activations (qkv)");
    alloc_act(l.att_h, l.att_f, int64_t{B} * NH * T * T, "activations (attention probabilities)");
    alloc_act(l.atty_h, l.atty_f, N * C, "activations (attention output)");
    alloc_act(l.ln2_h, l.ln2_f, N * C, "activations (ln2)");
    alloc_act(l.fch_h, l.fch_f, N * 4 * C, "activations (fc)");
    alloc_act(l.fchg_h, l.fchg_f, N * 4 * C, "activations (gelu)");
    l.res2 = cuda::DeviceBuffer<float>(N * C, "activations (residual)");
    l.res3 = cuda::DeviceBuffer<float>(N * C, "activations (residual)");
  }
  inputs_d_ = cuda::DeviceBuffer<int>(N, "token ids");
  targets_d_ = cuda::DeviceBuffer<int>(N, "token ids");
  encoded_ = cuda::DeviceBuffer<float>(N * C, "activations (embedding)");
  lnf_mean_ = cuda::DeviceBuffer<float>(N, "activations");
  lnf_rstd_ = cuda::DeviceBuffer<float>(N, "activations");
  losses_ = cuda::DeviceBuffer<float>(N, "losses");
  alloc_act(lnf_h_, lnf_f_, N * C, "activations (ln_f)");
  logits_ = cuda::DeviceBuffer<float>(N * Vp, "the logits");
  alloc_act(dlogits_h_, dlogits_f_, N * Vp, "the logits' gradient");
  proj_ = cuda::DeviceBuffer<float>(N * C, "backward scratch");
  dres_ = cuda::DeviceBuffer<float>(N * C, "backward scratch");
  alloc_act(dC_h_, dC_f_, N * C, "backward scratch");
  alloc_act(dC2_h_, dC2_f_, N * C, "backward scratch");
  alloc_act(d3C_h_, d3C_f_, N * 3 * C, "backward scratch");
  alloc_act(d4C_h_, d4C_f_, N * 4 * C, "backward scratch");
  // Attention's scratch, taken now so that the first step does not grow it mid-run.
  ctx_.scratch(cuda::attention_scratch_bytes(B, T, static_cast<int>(C), static_cast<int>(NH),
                                             dtype_));
}

void GpuGpt::alloc_act(cuda::DeviceBuffer<uint16_t>& h, cuda::DeviceBuffer<float>& f, int64_t n,
                       const char* what) {
  if (dtype_ == DType::kF32) {
    f = cuda::DeviceBuffer<float>(n, what);
  } else {
    h = cuda::DeviceBuffer<uint16_t>(n, what);
  }
}

TypedPtr GpuGpt::act(cuda::DeviceBuffer<uint16_t>& h, cuda::DeviceBuffer<float>& f) const {
  return dtype_ == DType::kF32 ? TypedPtr(f.data()) : TypedPtr(h.data(), dtype_);
}

ConstTypedPtr GpuGpt::wmat(const float* w32, const uint16_t* w16) const {
  return dtype_ == DType::kF32 ? ConstTypedPtr(w32) : ConstTypedPtr(w16, dtype_);
}

ConstTypedPtr GpuGpt::wbias(const float* b32, const uint16_t* b16, bool out_f32) const {
  if (b32 == nullptr) return {};
  return (dtype_ == DType::kF32 || out_f32) ? ConstTypedPtr(b32) : ConstTypedPtr(b16, dtype_);
}

uint64_t GpuGpt::site_seed(int layer, int site) const {
  return splitmix64(dropout_seed_ ^ splitmix64(static_cast<uint64_t>(layer + 1) * 8 + site));
}

void GpuGpt::upload_params(const float* host) {
  params_.upload(host, params_.size());
  if (dtype_ != DType::kF32) {
    cuda::convert(TypedPtr(params_h_.data(), dtype_), ConstTypedPtr(params_.data()),
                  static_cast<int64_t>(params_.size()));
  }
}

void GpuGpt::download_params(float* host) const {
  cuda::copy_to_host(host, params_.data(), params_.bytes());
}

void GpuGpt::download_grads(float* host) const {
  cuda::copy_to_host(host, grads_.data(), grads_.bytes());
}

void GpuGpt::upload_adam_state(const float* m, const float* v) {
  m_.upload(m, m_.size());
  v_.upload(v, v_.size());
}

void GpuGpt::download_adam_state(float* m, float* v) const {
  cuda::copy_to_host(m, m_.data(), m_.bytes());
  cuda::copy_to_host(v, v_.data(), v_.bytes());
}

void GpuGpt::zero_grad() { grads_.zero(); }

float GpuGpt::forward(const int* inputs, const int* targets, int B, int T, bool training,
                      uint64_t dropout_seed, float grad_scale) {
  CHECK(B >= 1 && B <= maxB_ && T >= 1 && T <= maxT_,
        "GPU forward of {} x {} tokens, but the model was sized for {} x {}", B, T, maxB_, maxT_);
  const int C = config_.n_embd, NH = config_.n_head, L = config_.n_layer;
  const int V = config_.vocab_size, Vp = config_.padded_vocab_size();
  const int64_t N = int64_t{B} * T;
  const NormKind norm = arch_.norm;
  for (int64_t i = 0; i < N; ++i) {
    CHECK(inputs[i] >= 0 && inputs[i] < V, "token id {} at position {} is outside the vocab [0, {})",
          inputs[i], i, V);
  }
  B_ = B;
  T_ = T;
  training_ = training && targets != nullptr;
  dropout_seed_ = dropout_seed;
  dropout_p_ = training ? static_cast<float>(config_.dropout) : 0.0f;
  const float p = dropout_p_;
  const bool drop = p > 0;
  cuda::copy_to_device(inputs_d_.data(), inputs, N * sizeof(int));

  cuda::encoder_forward(encoded_.data(), inputs_d_.data(), w_.wte, w_.wpe, B, T, C);
  if (drop) {
    cuda::dropout_forward(encoded_.data(), ConstTypedPtr(encoded_.data()), N * C, p,
                          site_seed(-1, kSiteEmbedding));
  }
  const float* x = encoded_.data();
  for (int l = 0; l < L; ++l) {
    Layer& a = layers_[l];
    const BlockWeights& w = w_.h[l];
    const LowpBlockWeights* lw = dtype_ == DType::kF32 ? nullptr : &lw_.h[l];
    auto w16 = [&](uint16_t* LowpBlockWeights::*field) -> const uint16_t* {
      return lw ? lw->*field : nullptr;
    };
    const TypedPtr ln1 = act(a.ln1_h, a.ln1_f), qkv = act(a.qkv_h, a.qkv_f);
    const TypedPtr att = act(a.att_h, a.att_f), atty = act(a.atty_h, a.atty_f);
    const TypedPtr ln2 = act(a.ln2_h, a.ln2_f), fch = act(a.fch_h, a.fch_f);
    const TypedPtr fchg = act(a.fchg_h, a.fchg_f);
    cuda::layernorm_forward(ln1, a.ln1_mean.data(), a.ln1_rstd.data(), x, w.ln1w, w.ln1b, N, C,
                            norm);
    cuda::matmul_forward(ctx_, qkv, ln1, wmat(w.qkvw, w16(&LowpBlockWeights::qkvw)),
                         wbias(w.qkvb, w16(&LowpBlockWeights::qkvb), false), N, C, 3 * C);
    cuda::attention_forward(ctx_, atty, att, qkv, B, T, C, NH, p, site_seed(l, kSiteAttnProbs));
    cuda::matmul_forward(ctx_, TypedPtr(proj_.data()), atty,
                         wmat(w.attprojw, w16(&LowpBlockWeights::attprojw)),
                         wbias(w.attprojb, w16(&LowpBlockWeights::attprojb), true), N, C, C);
    if (drop) {
      cuda::dropout_forward(proj_.data(), ConstTypedPtr(proj_.data()), N * C, p,
                            site_seed(l, kSiteAttnOut));
    }
    cuda::residual_layernorm_forward(a.res2.data(), ln2, a.ln2_mean.data(), a.ln2_rstd.data(), x,
                                     proj_.data(), w.ln2w, w.ln2b, N, C, norm);
    cuda::matmul_forward(ctx_, fch, ln2, wmat(w.fcw, w16(&LowpBlockWeights::fcw)),
                         wbias(w.fcb, w16(&LowpBlockWeights::fcb), false), N, C, 4 * C);
    cuda::gelu_forward(fchg, fch, N * 4 * C, arch_.activation);
    cuda::matmul_forward(ctx_, TypedPtr(proj_.data()), fchg,
                         wmat(w.fcprojw, w16(&LowpBlockWeights::fcprojw)),
                         wbias(w.fcprojb, w16(&LowpBlockWeights::fcprojb), true), N, 4 * C, C);
    if (drop) {
      cuda::dropout_forward(proj_.data(), ConstTypedPtr(proj_.data()), N * C, p,
                            site_seed(l, kSiteMlpOut));
    }
    cuda::residual_forward(a.res3.data(), a.res2.data(), proj_.data(), N * C);
    x = a.res3.data();
  }
  const TypedPtr lnf = act(lnf_h_, lnf_f_);
  cuda::layernorm_forward(lnf, lnf_mean_.data(), lnf_rstd_.data(), x, w_.lnfw, w_.lnfb, N, C, norm);
  const ConstTypedPtr head = wmat(w_.head, lw_.head);
  cuda::matmul_forward(ctx_, TypedPtr(logits_.data()), lnf, head, {}, N, C, Vp);
  logits_valid_ = targets == nullptr;
  backward_ready_ = false;
  if (targets == nullptr) {
    ctx_.synchronize("the GPU forward");
    return 0.0f;
  }
  int64_t valid = 0;
  for (int64_t i = 0; i < N; ++i) {
    CHECK(targets[i] == -1 || (targets[i] >= 0 && targets[i] < V),
          "target id {} at position {} is outside the vocab [0, {})", targets[i], i, V);
    valid += targets[i] != -1;
  }
  cuda::copy_to_device(targets_d_.data(), targets, N * sizeof(int));
  const float dloss = valid > 0 ? grad_scale / static_cast<float>(valid) : 0.0f;
  cuda::crossentropy_forward_backward(losses_.data(),
                                      training_ ? act(dlogits_h_, dlogits_f_) : TypedPtr(),
                                      logits_.data(), targets_d_.data(), dloss, N, V, Vp);
  std::vector<float> losses(N);
  cuda::copy_to_host(losses.data(), losses_.data(), N * sizeof(float));
  double sum = 0;
  for (float v : losses) sum += v;
  backward_ready_ = training_;
  return valid > 0 ? static_cast<float>(sum / static_cast<double>(valid)) : 0.0f;
}

void GpuGpt::backward() {
  CHECK(backward_ready_, "GpuGpt::backward needs a training forward with targets first");
  backward_ready_ = false;
  const int B = B_, T = T_, C = config_.n_embd, NH = config_.n_head, L = config_.n_layer;
  const int Vp = config_.padded_vocab_size();
  const int64_t N = int64_t{B} * T;
  const NormKind norm = arch_.norm;
  const float p = dropout_p_;
  const bool drop = p > 0;
  const TypedPtr dC = act(dC_h_, dC_f_), dC2 = act(dC2_h_, dC2_f_);
  const TypedPtr d3C = act(d3C_h_, d3C_f_), d4C = act(d4C_h_, d4C_f_);
  float* dres = dres_.data();

  // Classifier: dlnf = dlogits @ head; dhead += dlogits^T @ lnf.
  const TypedPtr lnf = act(lnf_h_, lnf_f_);
  cuda::matmul_backward(ctx_, dC, g_.head, nullptr, act(dlogits_h_, dlogits_f_), lnf,
                        wmat(w_.head, lw_.head), N, C, Vp);
  dres_.zero();
  const float* x_last = L > 0 ? layers_[L - 1].res3.data() : encoded_.data();
  cuda::layernorm_backward(ctx_, dres, g_.lnfw, g_.lnfb, dC, x_last, w_.lnfw, lnf_mean_.data(),
                           lnf_rstd_.data(), N, C, norm);
  // dres is the gradient of the residual stream, carried down through the blocks.
  auto branch_grad = [&](TypedPtr out, uint64_t seed) {
    if (drop) {
      cuda::dropout_backward(out, ConstTypedPtr(dres), N * C, p, seed);
    } else {
      cuda::convert(out, ConstTypedPtr(dres), N * C);
    }
  };
  for (int l = L - 1; l >= 0; --l) {
    Layer& a = layers_[l];
    const BlockWeights& w = w_.h[l];
    BlockWeights& g = g_.h[l];
    const LowpBlockWeights* lw = dtype_ == DType::kF32 ? nullptr : &lw_.h[l];
    auto w16 = [&](uint16_t* LowpBlockWeights::*field) -> const uint16_t* {
      return lw ? lw->*field : nullptr;
    };
    const float* x = l > 0 ? layers_[l - 1].res3.data() : encoded_.data();
    const TypedPtr ln1 = act(a.ln1_h, a.ln1_f), qkv = act(a.qkv_h, a.qkv_f);
    const TypedPtr att = act(a.att_h, a.att_f), atty = act(a.atty_h, a.atty_f);
    const TypedPtr ln2 = act(a.ln2_h, a.ln2_f), fch = act(a.fch_h, a.fch_f);
    const TypedPtr fchg = act(a.fchg_h, a.fchg_f);
    // MLP: res3 = res2 + drop(fcproj(act(fc(ln2(res2))))).
    branch_grad(dC, site_seed(l, kSiteMlpOut));
    cuda::matmul_backward(ctx_, d4C, g.fcprojw, g.fcprojb, dC, fchg,
                          wmat(w.fcprojw, w16(&LowpBlockWeights::fcprojw)), N, 4 * C, C);
    cuda::gelu_backward(d4C, fch, d4C, N * 4 * C, arch_.activation);
    cuda::matmul_backward(ctx_, dC2, g.fcw, g.fcb, d4C, ln2,
                          wmat(w.fcw, w16(&LowpBlockWeights::fcw)), N, C, 4 * C);
    cuda::layernorm_backward(ctx_, dres, g.ln2w, g.ln2b, dC2, a.res2.data(), w.ln2w,
                             a.ln2_mean.data(), a.ln2_rstd.data(), N, C, norm);
    // Attention: res2 = x + drop(attproj(attention(qkv(ln1(x))))).
    branch_grad(dC, site_seed(l, kSiteAttnOut));
    cuda::matmul_backward(ctx_, dC2, g.attprojw, g.attprojb, dC, atty,
                          wmat(w.attprojw, w16(&LowpBlockWeights::attprojw)), N, C, C);
    cuda::attention_backward(ctx_, d3C, dC2, att, qkv, B, T, C, NH, p,
                             site_seed(l, kSiteAttnProbs));
    cuda::matmul_backward(ctx_, dC, g.qkvw, g.qkvb, d3C, ln1,
                          wmat(w.qkvw, w16(&LowpBlockWeights::qkvw)), N, C, 3 * C);
    cuda::layernorm_backward(ctx_, dres, g.ln1w, g.ln1b, dC, x, w.ln1w, a.ln1_mean.data(),
                             a.ln1_rstd.data(), N, C, norm);
  }
  // Embeddings (the tied head's dwte was accumulated above, into the same gradient).
  if (drop) {
    cuda::dropout_backward(proj_.data(), ConstTypedPtr(dres), N * C, p,
                           site_seed(-1, kSiteEmbedding));
    dres = proj_.data();
  }
  cuda::encoder_backward(ctx_, g_.wte, g_.wpe, dres, inputs_d_.data(), B, T, C);
}

double GpuGpt::grad_norm() {
  return std::sqrt(cuda::sum_squares(ctx_, grads_.data(), static_cast<int64_t>(grads_.size())));
}

void GpuGpt::adamw_step(double lr, double beta1, double beta2, double eps, double weight_decay,
                        float grad_scale, int64_t step) {
  for (const ParamSpec& s : table_.specs()) {
    cuda::AdamWArgs a;
    a.lr = static_cast<float>(lr);
    a.beta1 = static_cast<float>(beta1);
    a.beta2 = static_cast<float>(beta2);
    a.eps = static_cast<float>(eps);
    a.weight_decay = s.decay ? static_cast<float>(weight_decay) : 0.0f;
    a.grad_scale = grad_scale;
    a.step = step;
    TypedPtr lowp = dtype_ == DType::kF32 ? TypedPtr()
                                          : TypedPtr(params_h_.data() + s.offset, dtype_);
    cuda::adamw_update(params_.data() + s.offset, lowp, m_.data() + s.offset,
                       v_.data() + s.offset, grads_.data() + s.offset, s.numel, a);
  }
}

std::vector<float> GpuGpt::download_logits() const {
  CHECK(logits_valid_, "GpuGpt::download_logits needs a forward without targets first");
  std::vector<float> out(static_cast<size_t>(B_) * T_ * config_.padded_vocab_size());
  cuda::copy_to_host(out.data(), logits_.data(), out.size() * sizeof(float));
  return out;
}

}  // namespace nanogpt
