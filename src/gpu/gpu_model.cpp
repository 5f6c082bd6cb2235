// GpuGpt (gpu_model.h): allocation from the parameter table and the batch shape, and the forward /
// backward / AdamW step as a screen of device-op calls per block (kernels/cuda/ops_cuda.h).
// Block:  x -> ln1 -> qkv -> attention -> attproj -> [dropout] -> res2 = x + . -> ln2 -> fc
//           -> gelu/relu2 -> fcproj -> [dropout] -> res3 = res2 + .
// Each residual add is fused into the norm that reads its sum (res2 into ln2; res3 into the next
// block's ln1, or ln_f).
#include "gpu/gpu_model.h"

#include <cmath>
#include <cstdlib>
#include <string>

#include "core/check.h"
#include "core/rng.h"
#include "kernels/cuda/ops_cuda.h"
#include "kernels/gpu_flash_rule.h"

namespace nanogpt {

namespace {

// The dropout sites of the CPU model (model/gpt.cpp), so both draw the same masks.
enum Site : int { kSiteEmbedding = 0, kSiteAttnProbs = 1, kSiteAttnOut = 2, kSiteMlpOut = 3 };

}  // namespace

GpuFlashKernel gpu_flash_kernel_from_env() {
  const char* v = std::getenv("NANOGPT_GPU_FLASH_KERNEL");
  const std::string s = v ? v : "";
  if (s.empty() || s == "mma") return GpuFlashKernel::kMma;
  CHECK(s == "wmma", "NANOGPT_GPU_FLASH_KERNEL='{}': expected 'mma' (the default) or 'wmma'", s);
  return GpuFlashKernel::kWmma;
}

bool gpu_gelu_epilogue_from_env() {
  const char* v = std::getenv("NANOGPT_GPU_GELU_EPILOGUE");
  const std::string s = v ? v : "";
  CHECK(s.empty() || s == "1" || s == "0",
        "NANOGPT_GPU_GELU_EPILOGUE='{}': expected 1 (the default: GELU in the matmul epilogues) or "
        "0 (its own kernels)",
        s);
  return s != "0";
}

GpuGpt::GpuGpt(cuda::CudaContext& ctx, const ModelConfig& config, DType dtype, int B, int T,
               bool naive_attention, GpuFlashKernel flash_kernel, bool gelu_epilogue)
    : ctx_(ctx),
      config_(config),
      arch_(Architecture::of(config)),
      table_(config),
      dtype_(dtype),
      maxB_(B),
      maxT_(T),
      flash_(!naive_attention &&
             gpu_flash_attention_supported(dtype, config.n_embd, config.n_head)),
      flash_kernel_(flash_kernel),
      gelu_epilogue_(gelu_epilogue && dtype == DType::kBF16 &&
                     arch_.activation == MlpActivation::kTanh) {
  CHECK(dtype == DType::kF32 || dtype == DType::kBF16,
        "--device=cuda trains in float32 or bfloat16, not {} (use --dtype=bfloat16)",
        dtype_name(dtype));
  CHECK(T <= config.block_size, "block of {} tokens exceeds the model's block_size {}", T,
        config.block_size);
  CHECK(config.qk_norm_gain == 1.0,
        "--device=cuda does not run qk_norm_gain != 1 (QK-norm's query gain) yet: use "
        "--device=cpu for this model");
  CHECK(!config.unet_skips,
        "--device=cuda does not run unet_skips (U-net skips) yet: use --device=cpu for this model");
  CHECK(config.attn_gain == 0.0,
        "--device=cuda does not run attn_gain (the attention branch's learned gain) yet: use "
        "--device=cpu for this model");
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
  if (arch_.rotary) {
    const RotaryTables tables(config.block_size, config.head_size(), arch_.rope_theta);
    rotary_cos_ = cuda::DeviceBuffer<float>(tables.cos.size(), "the rotary tables");
    rotary_sin_ = cuda::DeviceBuffer<float>(tables.sin.size(), "the rotary tables");
    rotary_cos_.upload(tables.cos);
    rotary_sin_.upload(tables.sin);
  }

  layers_.resize(config.n_layer);
  for (Layer& l : layers_) {
    l.ln1_mean = cuda::DeviceBuffer<float>(N, "activations");
    l.ln1_rstd = cuda::DeviceBuffer<float>(N, "activations");
    l.ln2_mean = cuda::DeviceBuffer<float>(N, "activations");
    l.ln2_rstd = cuda::DeviceBuffer<float>(N, "activations");
    alloc_act(l.ln1_h, l.ln1_f, N * C, "activations (ln1)");
    alloc_act(l.qkv_h, l.qkv_f, N * 3 * C, "activations (qkv)");
    if (flash_) {
      l.lse = cuda::DeviceBuffer<float>(int64_t{B} * NH * T, "activations (attention statistics)");
    } else {
      alloc_act(l.att_h, l.att_f, int64_t{B} * NH * T * T, "activations (attention probabilities)");
    }
    alloc_act(l.atty_h, l.atty_f, N * C, "activations (attention output)");
    alloc_act(l.ln2_h, l.ln2_f, N * C, "activations (ln2)");
    alloc_act(l.fch_h, l.fch_f, N * 4 * C, "activations (fc)");
    alloc_act(l.fchg_h, l.fchg_f, N * 4 * C, "activations (gelu)");
    if (arch_.qk_norm) l.qk_rstd = cuda::DeviceBuffer<float>(N * 2 * NH, "activations (QK-norm)");
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
  if (!lowp_logits()) logits_ = cuda::DeviceBuffer<float>(N * Vp, "the logits");
  alloc_act(dlogits_h_, dlogits_f_, N * Vp, "the logits' gradient");
  proj_ = cuda::DeviceBuffer<float>(N * C, "backward scratch");
  dres_ = cuda::DeviceBuffer<float>(N * C, "backward scratch");
  alloc_act(dC_h_, dC_f_, N * C, "backward scratch");
  alloc_act(dC2_h_, dC2_f_, N * C, "backward scratch");
  alloc_act(d3C_h_, d3C_f_, N * 3 * C, "backward scratch");
  alloc_act(d4C_h_, d4C_f_, N * 4 * C, "backward scratch");
  // Attention's scratch, taken now so that the first step does not grow it mid-run.
  if (!flash_) {
    ctx_.scratch(
        cuda::attention_scratch_bytes(B, T, static_cast<int>(C), static_cast<int>(NH), dtype_));
  }
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

void GpuGpt::qk_forward(TypedPtr qkv, float* rstd, int64_t N, int T, int pos0) {
  const int C = config_.n_embd, NH = config_.n_head;
  if (arch_.qk_norm) cuda::qk_rmsnorm_forward(qkv, rstd, N, C, NH);
  if (arch_.rotary) {
    cuda::rotary_forward(qkv, rotary_cos_.data(), rotary_sin_.data(), N, T, pos0, C, NH);
  }
}

void GpuGpt::qk_backward(TypedPtr dqkv, ConstTypedPtr qkv, const float* rstd, int64_t N, int T) {
  const int C = config_.n_embd, NH = config_.n_head;
  // qkv holds the rotated output: QK-norm's backward runs in that frame first (ops_arch.h).
  if (arch_.qk_norm) cuda::qk_rmsnorm_backward(dqkv, qkv, rstd, N, C, NH);
  if (arch_.rotary) {
    cuda::rotary_backward(dqkv, rotary_cos_.data(), rotary_sin_.data(), N, T, 0, C, NH);
  }
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
    CHECK(inputs[i] >= 0 && inputs[i] < V,
          "token id {} at position {} is outside the vocab [0, {})", inputs[i], i, V);
  }
  B_ = B;
  T_ = T;
  training_ = training && targets != nullptr;
  dropout_seed_ = dropout_seed;
  dropout_p_ = training ? static_cast<float>(config_.dropout) : 0.0f;
  attn_dropout_p_ = training ? static_cast<float>(config_.attention_dropout()) : 0.0f;
  const float p = dropout_p_;
  const bool drop = p > 0;
  cuda::copy_to_device(inputs_d_.data(), inputs, N * sizeof(int));

  const double e = static_cast<double>(dtype_size(dtype_));  // bytes of an activation
  const double NC = static_cast<double>(N) * C;
  {
    auto t = timed(OpClass::kElementwise, 0, NC * 12);
    cuda::encoder_forward(encoded_.data(), inputs_d_.data(), w_.wte, w_.wpe, B, T, C);
    if (drop) {
      cuda::dropout_forward(encoded_.data(), ConstTypedPtr(encoded_.data()), N * C, p,
                            site_seed(-1, kSiteEmbedding));
    }
  }
  const float* x = encoded_.data();
  // A block's last residual add, res3 = res2 + proj_, is left to the next norm (the next block's
  // ln1 or ln_f), which forms and writes it while normalizing it: one pass over the stream fewer.
  float* pending_res = nullptr;
  const float* pending_a = nullptr;
  auto norm_of_stream = [&](TypedPtr out, float* mean, float* rstd, const float* weight,
                            const float* bias) {
    if (pending_res) {
      cuda::residual_layernorm_forward(pending_res, out, mean, rstd, pending_a, proj_.data(),
                                       weight, bias, N, C, norm);
    } else {
      cuda::layernorm_forward(out, mean, rstd, x, weight, bias, N, C, norm);
    }
  };
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
    {
      auto t = timed(OpClass::kNorm, 8 * NC, NC * ((pending_res ? 12 : 4) + e));
      norm_of_stream(ln1, a.ln1_mean.data(), a.ln1_rstd.data(), w.ln1w, w.ln1b);
    }
    {
      auto t = timed(OpClass::kMatmul, 2 * NC * 3 * C, e * (NC * 4 + 3.0 * C * C));
      cuda::matmul_forward(ctx_, qkv, ln1, wmat(w.qkvw, w16(&LowpBlockWeights::qkvw)),
                           wbias(w.qkvb, w16(&LowpBlockWeights::qkvb), false), N, C, 3 * C);
    }
    auto scope = timed(OpClass::kAttention, 2.0 * B * T * double(T) * C, e * NC * 4);
    qk_forward(qkv, a.qk_rstd.data(), N, T);
    if (flash_) {
      auto* forward = flash_kernel_ == GpuFlashKernel::kMma ? cuda::flash_attention_forward_mma
                                                            : cuda::flash_attention_forward;
      forward(ctx_, atty, a.lse.data(), qkv, B, T, C, NH, attn_dropout_p_,
              site_seed(l, kSiteAttnProbs));
    } else {
      cuda::attention_forward(ctx_, atty, att, qkv, B, T, C, NH, attn_dropout_p_,
                              site_seed(l, kSiteAttnProbs));
    }
    scope.next(OpClass::kMatmul, 2 * NC * C, e * (NC + 1.0 * C * C) + 4 * NC);
    cuda::matmul_forward(ctx_, TypedPtr(proj_.data()), atty,
                         wmat(w.attprojw, w16(&LowpBlockWeights::attprojw)),
                         wbias(w.attprojb, w16(&LowpBlockWeights::attprojb), true), N, C, C);
    scope.next(OpClass::kNorm, 9 * NC, NC * (12 + e) + (drop ? 8 * NC : 0));
    if (drop) {
      cuda::dropout_forward(proj_.data(), ConstTypedPtr(proj_.data()), N * C, p,
                            site_seed(l, kSiteAttnOut));
    }
    cuda::residual_layernorm_forward(a.res2.data(), ln2, a.ln2_mean.data(), a.ln2_rstd.data(), x,
                                     proj_.data(), w.ln2w, w.ln2b, N, C, norm);
    const ConstTypedPtr fcw = wmat(w.fcw, w16(&LowpBlockWeights::fcw));
    const ConstTypedPtr fcb = wbias(w.fcb, w16(&LowpBlockWeights::fcb), false);
    if (gelu_epilogue_) {  // fch and its GELU both from the product's epilogue
      scope.next(OpClass::kMatmul, 2 * NC * 4 * C, e * (NC * 9 + 4.0 * C * C));
      cuda::matmul_gelu_forward(ctx_, fchg, fch, ln2, fcw, fcb, N, C, 4 * C, arch_.activation,
                                true);
    } else {
      scope.next(OpClass::kMatmul, 2 * NC * 4 * C, e * (NC * 5 + 4.0 * C * C));
      cuda::matmul_forward(ctx_, fch, ln2, fcw, fcb, N, C, 4 * C);
      scope.next(OpClass::kElementwise, 0, e * NC * 8);
      cuda::gelu_forward(fchg, fch, N * 4 * C, arch_.activation);
    }
    scope.next(OpClass::kMatmul, 2 * NC * 4 * C, e * (NC * 4 + 4.0 * C * C) + 4 * NC);
    cuda::matmul_forward(ctx_, TypedPtr(proj_.data()), fchg,
                         wmat(w.fcprojw, w16(&LowpBlockWeights::fcprojw)),
                         wbias(w.fcprojb, w16(&LowpBlockWeights::fcprojb), true), N, 4 * C, C);
    if (drop) {
      scope.next(OpClass::kElementwise, 0, 8 * NC);
      cuda::dropout_forward(proj_.data(), ConstTypedPtr(proj_.data()), N * C, p,
                            site_seed(l, kSiteMlpOut));
    }
    pending_res = a.res3.data();  // res3 = res2 + proj_, formed by the next norm
    pending_a = a.res2.data();
    x = a.res3.data();
  }
  const TypedPtr lnf = act(lnf_h_, lnf_f_);
  const double NVp = static_cast<double>(N) * Vp;
  auto scope = timed(OpClass::kNorm, 8 * NC, NC * ((pending_res ? 12 : 4) + e));
  norm_of_stream(lnf, lnf_mean_.data(), lnf_rstd_.data(), w_.lnfw, w_.lnfb);
  const ConstTypedPtr head = wmat(w_.head, lw_.head);
  // The logits: float32, or (bfloat16 with targets, no soft-cap) bfloat16 in dlogits' buffer, the
  // loss's gradient then overwriting them in place, as nanoGPT's autocast and llm.c keep them.
  const bool lowp_z = targets != nullptr && lowp_logits();
  const TypedPtr z = lowp_z ? act(dlogits_h_, dlogits_f_) : TypedPtr(f32_logits(N));
  const double ze = lowp_z ? e : 4.0;  // bytes of a logit
  scope.next(OpClass::kClassifier, 2 * NVp * C, e * (NC + double(Vp) * C) + ze * NVp);
  cuda::matmul_forward(ctx_, z, lnf, head, {}, N, C, Vp);
  logits_valid_ = targets == nullptr;
  backward_ready_ = false;
  const float cap = arch_.logit_softcap;
  if (targets == nullptr) {
    if (cap > 0) cuda::softcap_forward(z.f32(), N * Vp, cap);
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
  scope.next(OpClass::kClassifier, 0, NVp * (ze + (training_ ? e : 0)));
  const TypedPtr dlogits = training_ ? act(dlogits_h_, dlogits_f_) : TypedPtr();
  if (cap > 0) {
    cuda::crossentropy_softcap_forward_backward(losses_.data(), dlogits, z.f32(), targets_d_.data(),
                                                dloss, N, V, Vp, cap);
  } else {
    cuda::crossentropy_forward_backward(losses_.data(), dlogits, z, targets_d_.data(), dloss, N, V,
                                        Vp);
  }
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

  const double e = static_cast<double>(dtype_size(dtype_));
  const double NC = static_cast<double>(N) * C, NVp = static_cast<double>(N) * Vp;
  // Classifier: dlnf = dlogits @ head; dhead += dlogits^T @ lnf.
  const TypedPtr lnf = act(lnf_h_, lnf_f_);
  auto scope = timed(OpClass::kClassifier, 4 * NVp * C, e * (2 * NVp + 2 * NC) + 8.0 * Vp * C);
  cuda::matmul_backward(ctx_, dC, g_.head, nullptr, act(dlogits_h_, dlogits_f_), lnf,
                        wmat(w_.head, lw_.head), N, C, Vp);
  scope.next(OpClass::kNorm, 14 * NC, NC * (12 + e));
  dres_.zero();
  const float* x_last = L > 0 ? layers_[L - 1].res3.data() : encoded_.data();
  // dres is the gradient of the residual stream, carried down through the blocks. Each branch's
  // backward starts from it in the activation dtype (dC): without dropout the norm backward that
  // last updated dres writes that copy too; with dropout the mask makes it (branch_grad).
  const TypedPtr branch_copy = drop ? TypedPtr() : dC;
  cuda::layernorm_backward(ctx_, dres, g_.lnfw, g_.lnfb, dC, x_last, w_.lnfw, lnf_mean_.data(),
                           lnf_rstd_.data(), N, C, norm, branch_copy);
  auto branch_grad = [&](TypedPtr out, uint64_t seed) {
    if (drop) cuda::dropout_backward(out, ConstTypedPtr(dres), N * C, p, seed);
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
    if (drop) {
      scope.next(OpClass::kElementwise, 0, NC * (4 + e));
      branch_grad(dC, site_seed(l, kSiteMlpOut));
    }
    const ConstTypedPtr fcprojw = wmat(w.fcprojw, w16(&LowpBlockWeights::fcprojw));
    if (gelu_epilogue_) {  // d4C = (dC @ fcprojw) * GELU'(fch) in the product's epilogue
      scope.next(OpClass::kMatmul, 4 * NC * 4 * C, e * (NC * 13 + 8.0 * C * C) + 32.0 * C * C);
      cuda::matmul_gelu_backward(ctx_, d4C, g.fcprojw, g.fcprojb, dC, fchg, fcprojw, N, 4 * C, C,
                                 fch, arch_.activation, true);
    } else {
      scope.next(OpClass::kMatmul, 4 * NC * 4 * C, e * (NC * 9 + 8.0 * C * C) + 32.0 * C * C);
      cuda::matmul_backward(ctx_, d4C, g.fcprojw, g.fcprojb, dC, fchg, fcprojw, N, 4 * C, C);
      scope.next(OpClass::kElementwise, 0, e * NC * 12);
      cuda::gelu_backward(d4C, fch, d4C, N * 4 * C, arch_.activation);
    }
    scope.next(OpClass::kMatmul, 4 * NC * 4 * C, e * (NC * 9 + 8.0 * C * C) + 32.0 * C * C);
    cuda::matmul_backward(ctx_, dC2, g.fcw, g.fcb, d4C, ln2,
                          wmat(w.fcw, w16(&LowpBlockWeights::fcw)), N, C, 4 * C);
    scope.next(OpClass::kNorm, 14 * NC, NC * (12 + (drop ? 1 : 2) * e));
    cuda::layernorm_backward(ctx_, dres, g.ln2w, g.ln2b, dC2, a.res2.data(), w.ln2w,
                             a.ln2_mean.data(), a.ln2_rstd.data(), N, C, norm, branch_copy);
    // Attention: res2 = x + drop(attproj(attention(qkv(ln1(x))))).
    if (drop) {
      scope.next(OpClass::kElementwise, 0, NC * (4 + e));
      branch_grad(dC, site_seed(l, kSiteAttnOut));
    }
    scope.next(OpClass::kMatmul, 4 * NC * C, e * (NC * 3 + 2.0 * C * C) + 8.0 * C * C);
    cuda::matmul_backward(ctx_, dC2, g.attprojw, g.attprojb, dC, atty,
                          wmat(w.attprojw, w16(&LowpBlockWeights::attprojw)), N, C, C);
    scope.next(OpClass::kAttention, 4.0 * B * T * double(T) * C, e * NC * 8);
    if (flash_) {
      auto* backward = flash_kernel_ == GpuFlashKernel::kMma ? cuda::flash_attention_backward_mma
                                                             : cuda::flash_attention_backward;
      backward(ctx_, d3C, dC2, atty, a.lse.data(), qkv, B, T, C, NH, attn_dropout_p_,
               site_seed(l, kSiteAttnProbs));
    } else {
      cuda::attention_backward(ctx_, d3C, dC2, att, qkv, B, T, C, NH, attn_dropout_p_,
                               site_seed(l, kSiteAttnProbs));
    }
    qk_backward(d3C, qkv, a.qk_rstd.data(), N, T);
    scope.next(OpClass::kMatmul, 4 * NC * 3 * C, e * (NC * 8 + 6.0 * C * C) + 24.0 * C * C);
    cuda::matmul_backward(ctx_, dC, g.qkvw, g.qkvb, d3C, ln1,
                          wmat(w.qkvw, w16(&LowpBlockWeights::qkvw)), N, C, 3 * C);
    scope.next(OpClass::kNorm, 14 * NC, NC * (12 + e));
    // (dout is dC here, and so is the copy: the kernel reads each row before writing it.)
    cuda::layernorm_backward(ctx_, dres, g.ln1w, g.ln1b, dC, x, w.ln1w, a.ln1_mean.data(),
                             a.ln1_rstd.data(), N, C, norm, l > 0 ? branch_copy : TypedPtr());
  }
  // Embeddings (the tied head's dwte was accumulated above, into the same gradient).
  scope.next(OpClass::kElementwise, 0, NC * 12);
  if (drop) {
    cuda::dropout_backward(proj_.data(), ConstTypedPtr(dres), N * C, p,
                           site_seed(-1, kSiteEmbedding));
    dres = proj_.data();
  }
  cuda::encoder_backward(ctx_, g_.wte, g_.wpe, dres, inputs_d_.data(), B, T, C);
}

double GpuGpt::grad_norm() {
  auto t = timed(OpClass::kOptimizer, 2.0 * grads_.size(), 4.0 * grads_.size());
  return std::sqrt(cuda::sum_squares(ctx_, grads_.data(), static_cast<int64_t>(grads_.size())));
}

void GpuGpt::adamw_step(double lr, double beta1, double beta2, double eps, double weight_decay,
                        float grad_scale, int64_t step) {
  const double P = static_cast<double>(table_.total_numel());
  auto t = timed(OpClass::kOptimizer, 12 * P, P * (28 + (dtype_ == DType::kF32 ? 0 : 2)));
  for (const ParamSpec& s : table_.specs()) {
    cuda::AdamWArgs a;
    a.lr = static_cast<float>(lr);
    a.beta1 = static_cast<float>(beta1);
    a.beta2 = static_cast<float>(beta2);
    a.eps = static_cast<float>(eps);
    a.weight_decay = s.decay ? static_cast<float>(weight_decay) : 0.0f;
    a.grad_scale = grad_scale;
    a.step = step;
    TypedPtr lowp =
        dtype_ == DType::kF32 ? TypedPtr() : TypedPtr(params_h_.data() + s.offset, dtype_);
    cuda::adamw_update(params_.data() + s.offset, lowp, m_.data() + s.offset, v_.data() + s.offset,
                       grads_.data() + s.offset, s.numel, a);
  }
}

void GpuGpt::forward_one(int token, int pos, float* logits_out) {
  const int C = config_.n_embd, NH = config_.n_head, L = config_.n_layer;
  const int V = config_.vocab_size, Vp = config_.padded_vocab_size(), maxT = config_.block_size;
  CHECK(token >= 0 && token < V, "token id {} is outside the vocab [0, {})", token, V);
  CHECK(pos == cache_len_ && pos < maxT,
        "GPU forward_one at position {}: the cache holds {} tokens of at most {}", pos, cache_len_,
        maxT);
  const NormKind norm = arch_.norm;
  const size_t e = dtype_size(dtype_);
  if (kcache_h_.empty() && kcache_f_.empty()) {
    for (int l = 0; l < L; ++l) {
      if (dtype_ == DType::kF32) {
        kcache_f_.emplace_back(int64_t{maxT} * C, "the KV cache");
        vcache_f_.emplace_back(int64_t{maxT} * C, "the KV cache");
      } else {
        kcache_h_.emplace_back(int64_t{maxT} * C, "the KV cache");
        vcache_h_.emplace_back(int64_t{maxT} * C, "the KV cache");
      }
    }
  }
  cuda::copy_to_device(inputs_d_.data(), &token, sizeof(int));
  // One row: wpe's row `pos` is the position embedding of a one-token batch at t = 0.
  const float* wpe = w_.wpe ? w_.wpe + static_cast<int64_t>(pos) * C : nullptr;
  cuda::encoder_forward(encoded_.data(), inputs_d_.data(), w_.wte, wpe, 1, 1, C);
  Layer& tmp = layers_[0];  // the training buffers, as one-row scratch
  const TypedPtr ln1 = act(tmp.ln1_h, tmp.ln1_f), qkv = act(tmp.qkv_h, tmp.qkv_f);
  const TypedPtr atty = act(tmp.atty_h, tmp.atty_f), ln2 = act(tmp.ln2_h, tmp.ln2_f);
  const TypedPtr fch = act(tmp.fch_h, tmp.fch_f), fchg = act(tmp.fchg_h, tmp.fchg_f);
  const float* x = encoded_.data();
  for (int l = 0; l < L; ++l) {
    const BlockWeights& w = w_.h[l];
    const LowpBlockWeights* lw = dtype_ == DType::kF32 ? nullptr : &lw_.h[l];
    auto w16 = [&](uint16_t* LowpBlockWeights::*field) -> const uint16_t* {
      return lw ? lw->*field : nullptr;
    };
    const TypedPtr kc = dtype_ == DType::kF32 ? TypedPtr(kcache_f_[l].data())
                                              : TypedPtr(kcache_h_[l].data(), dtype_);
    const TypedPtr vc = dtype_ == DType::kF32 ? TypedPtr(vcache_f_[l].data())
                                              : TypedPtr(vcache_h_[l].data(), dtype_);
    cuda::layernorm_forward(ln1, tmp.ln1_mean.data(), tmp.ln1_rstd.data(), x, w.ln1w, w.ln1b, 1, C,
                            norm);
    cuda::matmul_forward(ctx_, qkv, ln1, wmat(w.qkvw, w16(&LowpBlockWeights::qkvw)),
                         wbias(w.qkvb, w16(&LowpBlockWeights::qkvb), false), 1, C, 3 * C);
    qk_forward(qkv, tmp.qk_rstd.data(), 1, 1, pos);
    cuda::copy_device(kc.at(int64_t{pos} * C).data, qkv.at(C).data, C * e);
    cuda::copy_device(vc.at(int64_t{pos} * C).data, qkv.at(2 * C).data, C * e);
    cuda::attention_decode(ctx_, atty, qkv, kc, vc, pos + 1, C, NH);
    cuda::matmul_forward(ctx_, TypedPtr(proj_.data()), atty,
                         wmat(w.attprojw, w16(&LowpBlockWeights::attprojw)),
                         wbias(w.attprojb, w16(&LowpBlockWeights::attprojb), true), 1, C, C);
    cuda::residual_layernorm_forward(tmp.res2.data(), ln2, tmp.ln2_mean.data(), tmp.ln2_rstd.data(),
                                     x, proj_.data(), w.ln2w, w.ln2b, 1, C, norm);
    cuda::matmul_forward(ctx_, fch, ln2, wmat(w.fcw, w16(&LowpBlockWeights::fcw)),
                         wbias(w.fcb, w16(&LowpBlockWeights::fcb), false), 1, C, 4 * C);
    cuda::gelu_forward(fchg, fch, 4 * C, arch_.activation);
    cuda::matmul_forward(ctx_, TypedPtr(proj_.data()), fchg,
                         wmat(w.fcprojw, w16(&LowpBlockWeights::fcprojw)),
                         wbias(w.fcprojb, w16(&LowpBlockWeights::fcprojb), true), 1, 4 * C, C);
    cuda::residual_forward(tmp.res3.data(), tmp.res2.data(), proj_.data(), C);
    x = tmp.res3.data();
  }
  const TypedPtr lnf = act(lnf_h_, lnf_f_);
  cuda::layernorm_forward(lnf, lnf_mean_.data(), lnf_rstd_.data(), x, w_.lnfw, w_.lnfb, 1, C, norm);
  float* z = f32_logits(1);
  cuda::matmul_forward(ctx_, TypedPtr(z), lnf, wmat(w_.head, lw_.head), {}, 1, C, Vp);
  if (arch_.logit_softcap > 0) cuda::softcap_forward(z, Vp, arch_.logit_softcap);
  cuda::copy_to_host(logits_out, z, static_cast<size_t>(Vp) * sizeof(float));
  ++cache_len_;
  logits_valid_ = false;
  backward_ready_ = false;
}

bool GpuGpt::lowp_logits() const { return dtype_ != DType::kF32 && arch_.logit_softcap <= 0.0f; }

float* GpuGpt::f32_logits(int64_t rows) {
  const size_t n = static_cast<size_t>(rows) * config_.padded_vocab_size();
  if (logits_.size() < n) logits_ = cuda::DeviceBuffer<float>(n, "the logits");
  return logits_.data();
}

std::vector<float> GpuGpt::download_logits() const {
  CHECK(logits_valid_, "GpuGpt::download_logits needs a forward without targets first");
  std::vector<float> out(static_cast<size_t>(B_) * T_ * config_.padded_vocab_size());
  cuda::copy_to_host(out.data(), logits_.data(), out.size() * sizeof(float));
  return out;
}

}  // namespace nanogpt
