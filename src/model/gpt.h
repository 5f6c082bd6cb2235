// GPT: the GPT-2 model on CPU. Owns the parameter and gradient arenas (ParamTable layout), the
// activations of the last forward, and runs forward / backward / one-token KV-cache decoding by
// calling ops through the backend seam (kernels/backend.h) only: one screen of op calls per block,
// no SIMD, threads or device specifics here.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "core/buffer.h"
#include "kernels/dtype.h"
#include "kernels/backend.h"
#include "kernels/op_profile.h"
#include "model/activations.h"
#include "model/architecture.h"
#include "model/kernel_choices.h"
#include "model/kv_cache.h"
#include "model/model_config.h"
#include "model/params.h"
#include "model/weights.h"

namespace nanogpt {

class Backend;

// Where the float32 master weights live. kInModel (the default): GPT owns the whole arena
// (params()). kOutside: mixed precision with the masters held by the caller -- ZeRO-1 keeps only a
// shard of them on each rank (distributed/zero1.h). The model then keeps, whole, the 16-bit copy the
// matmuls read and float32 copies of the tensors its kernels read in float32 (ParamSpec::lowp_only
// false: embeddings, LayerNorms, biases), both set through set_weights_range() and then
// all-gathered by the caller; params() and init_weights() are unavailable, dtype must be 16-bit.
enum class MasterWeights { kInModel, kOutside };

class GPT {
 public:
  // config is validated. tracker (nullable) is charged for params, grads and activations.
  // memory: the backend whose memory holds every arena (parameters, gradients, activations; null:
  // the host's, a CpuBackend's); forward, backward and forward_one then take that backend.
  explicit GPT(const ModelConfig& config, MemoryTracker* tracker = nullptr,
               MasterWeights masters = MasterWeights::kInModel, Backend* memory = nullptr);

  const ModelConfig& config() const { return config_; }
  const Architecture& architecture() const { return arch_; }
  const ParamTable& table() const { return table_; }
  // The arenas: table().total_numel() floats, tensor k at table().specs()[k].offset.
  // (Handing out the mutable arena marks the low-precision weight copy stale: the next forward
  // refreshes it, so an optimizer step through params() is always seen.)
  std::span<float> params() {
    check_masters_inside("params()");
    lowp_stale_ = true;
    return {params_.data(), params_.size()};
  }
  std::span<const float> params() const {
    check_masters_inside("params()");
    return {params_.data(), params_.size()};
  }
  std::span<float> grads() { return {grads_.data(), grads_.size()}; }
  std::span<const float> grads() const { return {grads_.data(), grads_.size()}; }

  // Mixed precision: matmuls read a copy of the weights in `dtype` (refreshed from the float32
  // master weights before the first forward after they change), and the big activations and
  // activation gradients are stored in `dtype`; LayerNorm, softmax and loss statistics, the
  // residual stream and all parameter gradients stay float32. float32 (the default) keeps no copy.
  void set_dtype(DType dtype);
  DType dtype() const { return dtype_; }
  // For an optimizer step that writes round(params) into the 16-bit copy as it updates params (the
  // fused step, optim FusedStepExtras::params_lowp): the copy (total_numel, dtype()), or a null
  // pointer in float32. The copy counts as fresh from here on, so the caller must write all of it
  // (or leave params unchanged) before the next forward.
  TypedPtr params_lowp_for_update() {
    if (dtype_ == DType::kF32) return {};
    lowp_stale_ = false;
    return {params_lowp_.data(), dtype_};
  }

  // MasterWeights::kOutside (after set_dtype): `master` holds the float32 master values of arena
  // elements [begin, end) (end - begin floats): rounds them into that range of the 16-bit copy and
  // copies the float32-read tensors' part of it into their float32 copies. With whole ranges of
  // every rank set (or all-gathered) the model computes exactly what kInModel computes from the
  // same masters.
  void set_weights_range(Backend& ops, const float* master, int64_t begin, int64_t end);
  MasterWeights master_weights() const { return masters_; }
  // The whole 16-bit copy (arena layout; dtype() bits) and the compact float32-read copies
  // (table().fp32_read_numel() floats), for the caller's all-gather. kOutside only.
  std::span<uint16_t> lowp_weights() { return {params_lowp_.data(), params_lowp_.size()}; }
  std::span<float> fp32_read_weights() { return {fp32_reads_.data(), fp32_reads_.size()}; }

  // nanoGPT's init (model/init.h) from `seed`.
  void init_weights(uint64_t seed);

  // inputs, targets (B, T) token ids; targets may be null (no loss), -1 = ignored position.
  // T <= block_size. Returns the mean loss over non-ignored targets (0 without targets or when
  // every target is ignored). training: apply dropout (if config.dropout > 0; masks derived from
  // dropout_seed, distinct per site and layer) and prepare backward.
  // With targets, the classifier runs chunk by chunk and never holds the (B*T, Vp) logits; with
  // training && targets it is fused with its own backward: each chunk's dlogits are multiplied
  // into dwte (ACCUMULATED into grads()) and into the gradient of lnf right away, all scaled by
  // grad_scale (e.g. 1/grad_accum_steps, times a loss scale), which backward() then continues with.
  float forward(Backend& ops, const int* inputs, const int* targets, int B, int T,
                bool training, uint64_t dropout_seed = 0, float grad_scale = 1.0f);
  // Backward of the last training forward (at most once per forward). Parameter gradients
  // ACCUMULATE (+=) into grads(), scaled by the forward's grad_scale, so gradient accumulation over
  // micro-batches is free; call zero_grad() once per optimizer step.
  void backward(Backend& ops);
  void zero_grad() { grads_.zero(); }

  // Called by backward() each time a contiguous range [begin, end) of grads() has become final for
  // this backward: ln_f first, then each block from the last to the first, then wte and wpe (the
  // tied classifier's dwte, accumulated in forward, is finished by the encoder backward at the
  // very end). Data-parallel training starts each range's all-reduce from here while the backward
  // goes on. An empty function (the default) disables it.
  using GradReadyHook = std::function<void(int64_t begin, int64_t end)>;
  void set_grad_ready_hook(GradReadyHook hook) { grad_ready_ = std::move(hook); }

  // Attaches a profile that every op call of forward, backward and forward_one is timed into
  // (null: none, the default).
  void set_profile(OpProfile* profile) { profile_ = profile; }

  // Which kernels run (model/kernel_choices.h); the default is the fast, fused, flash path.
  void set_kernel_choices(const KernelChoices& choices);
  // Floats of the attention=naive probabilities buffer for B sequences of T tokens (all layers);
  // what forward allocates and the estimator reports.
  static int64_t naive_attention_floats(const ModelConfig& config, int64_t B, int64_t T) {
    return B * config.n_head * T * T * config.n_layer;
  }
  const KernelChoices& kernel_choices() const { return choices_; }

  // Rows per classifier chunk (0 = automatic: about 64 MB of logits). For tests and benchmarks.
  void set_classifier_chunk_rows(int64_t rows) { chunk_rows_override_ = rows; }

  // Logits (B, T, Vp) of the last forward, which must have had no targets; only the first V
  // columns are meaningful. In the arenas' memory (the backend's: download them off the host).
  const float* logits() const;
  // Per-position losses (B, T) of the last forward with targets (0 at ignored positions).
  const float* losses() const { return acts_.losses; }
  int64_t num_valid_targets() const { return num_valid_; }

  // Generation: runs token `token` at position `pos` (0-based, pos <= cache.length(), earlier
  // positions already in the cache), stores its K, V in the cache (length becomes pos + 1) and
  // writes logits_out (Vp; only the first V meaningful). O(pos) work per token. No dropout.
  void forward_one(Backend& ops, KvCache& cache, int token, int pos, float* logits_out);

 private:
  void check_tokens(const int* tokens, int64_t n, bool allow_ignore, const char* what) const;
  // The matmul operand of a weight: w32 (its float32 view) in float32, else w16 (the same tensor
  // in the low-precision copy).
  ConstTypedPtr lowp(const float* w32, const uint16_t* w16) const;
  void check_masters_inside(const char* what) const;
  // That `ops` computes in the memory the arenas were allocated in.
  void check_backend(const Backend& ops, const char* what) const;
  // A scalar weight of the arenas (an attention gain, a U-net skip weight) read on the host, and
  // one added to: direct on the host, a download (and upload) elsewhere.
  float scalar(Backend& ops, const float* p) const;
  void add_to_scalar(Backend& ops, float* p, float v) const;
  // n host token ids where the ops read them: `host` itself on the host, else copied to tokens_
  // at offset (tokens_ reserved for 2 * rows).
  const int* stage_tokens(Backend& ops, const int* host, int64_t n, int64_t offset, int64_t rows);
  // The rotary tables where the ops read them (null without rotary positions).
  const float* rotary_cos() const;
  const float* rotary_sin() const;
  void refresh_lowp_weights(Backend& ops);
  uint64_t site_seed(int layer, int site) const;
  // Whether the MLP runs its fused ops (matmul_gelu_forward, gelu_matmul_backward) on N rows.
  bool fuse_mlp(const Backend& ops, int64_t N) const;
  // Block l's forward from x into acts_.layers[l] (see gpt.cpp).
  void forward_block(Backend& ops, int l, const float* x, bool ln1_done, bool for_backward);
  // U-net skips: the skip entering block l (unet_skip_into), -1 where none does or they are off.
  int skip_into(int l) const;
  // Block l's LayerNorm and GELU outputs: its own views (KernelChoices::recompute) or the
  // working buffers.
  TypedPtr ln1_out(int l) const;   // (N, C) block l's ln_1 output
  TypedPtr ln2_out(int l) const;   // (N, C) its ln_2 output
  TypedPtr gelu_out(int l) const;  // (N, 4C) its GELU output
  // Block l's input: the embedding, block l-1's output, or the skip input made from it
  // (forward: make_skip_input writes it; backward: block_input reads what it wrote).
  const float* block_input(int l) const;
  void make_skip_input(Backend& ops, int l);
  // QK-norm and rotary embeddings (as the architecture has them) in place on the q and k of qkv
  // (N, 3C) of B sequences of T rows at positions pos0.., rstd (N, 2NH) QK-norm's statistics; and
  // the backward of both on dqkv (qkv: the forward's output).
  void qk_forward(Backend& ops, TypedPtr qkv, float* rstd, int64_t N, int T, int pos0);
  void qk_backward(Backend& ops, TypedPtr dqkv, ConstTypedPtr qkv, const float* rstd, int64_t N,
                   int T);

  ModelConfig config_;
  Architecture arch_;  // what the blocks and the head are made of (from config_)
  ParamTable table_;
  MemoryTracker* tracker_ = nullptr;
  MemorySpace* memory_ = nullptr;  // where the arenas live (null: the host)
  MasterWeights masters_ = MasterWeights::kInModel;
  Buffer<float> params_;  // (total_numel); empty with kOutside masters
  Buffer<float> grads_;   // (total_numel) same layout
  // kOutside: (fp32_read_numel) the float32-read tensors, compact (ParamSpec::fp32_read_offset)
  Buffer<float> fp32_reads_;
  ModelWeights w_;        // views into params_ (kOutside: into fp32_reads_, matmul weights null)
  ModelWeights g_;        // views into grads_
  DType dtype_ = DType::kF32;
  Buffer<uint16_t> params_lowp_;  // (total_numel) params_ in dtype_; empty in float32
  LowpModelWeights lw_;           // views into params_lowp_ (null in float32)
  bool lowp_stale_ = true;
  Activations acts_;
  GradScratch scratch_;
  Buffer<float> full_logits_;  // (B, T, Vp) of the last forward without targets
  int64_t chunk_rows_override_ = 0;
  KernelChoices choices_;
  // attention=naive: the (B, NH, T, T) probabilities of every layer, (L, B*NH*T*T).
  Buffer<float> naive_att_;
  OpProfile* profile_ = nullptr;
  RotaryTables rotary_;              // position = 'rotary': cos, sin (block_size, HS/2), host
  Buffer<float> rotary_dev_;         // the same [cos | sin] in the arenas' memory (off the host)
  Buffer<float> decode_rstd_;        // (2 NH) QK-norm's statistics of forward_one's token
  Buffer<int> tokens_;               // (2 N) off the host: the forward's inputs, then targets
  Buffer<float> decode_logits_;      // (Vp) off the host: forward_one's logits before download
  bool on_host_ = true;              // whether the arenas are in host memory
  GradReadyHook grad_ready_;
  std::vector<int64_t> block_begin_;  // (L + 1) arena offset of block l's first tensor; [L] = ln_f
  // State of the last forward, used by backward.
  std::vector<int> inputs_;  // (B, T)
  int B_ = 0, T_ = 0;
  int64_t num_valid_ = 0;
  float dropout_p_ = 0.0f;  // dropout actually applied (0 unless training)
  float attn_dropout_p_ =
      0.0f;  // on the attention weights (attention_dropout(); 0 unless training)
  uint64_t dropout_seed_ = 0;
  bool backward_ready_ = false;
  bool logits_valid_ = false;
};

}  // namespace nanogpt
