// Activations of one forward pass for N = B*T rows (kept for backward), and the scratch gradients
// of the backward pass: each set is ONE Buffer cut into named views, re-allocated only when N
// grows. Dropout is applied in place (the mask is a hash of the position, recomputed in the
// backward), so it needs no views of its own.
// Mixed precision: the tensors typed TypedPtr are stored in the run's activation dtype (bf16 or
// fp16 halves them); statistics, the residual stream and the classifier's logits stay float32.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/buffer.h"
#include "kernels/dtype.h"
#include "model/model_config.h"

namespace nanogpt {

// What one block keeps for its backward: 10 C values per row (8 C of them in the activation dtype).
// The LayerNorm outputs and GELU's output are recomputed in the backward from what is kept (as
// llm.c does; cheap elementwise work instead of 6 C floats per row per layer), and the projections'
// outputs are never needed there.
struct LayerActivations {
  float* ln1_mean = nullptr;   // (N)
  float* ln1_rstd = nullptr;   // (N)
  TypedPtr qkv;                // (N, 3C)  rows [Q | K | V] (Q, K after QK-norm and rotary)
  float* qk_rstd = nullptr;    // (N, 2 NH) QK-norm's 1/rms of each q and k head (qk_norm only)
  TypedPtr atty;               // (N, C)   attention output (heads concatenated)
  float* lse = nullptr;        // (B, NH, T) log-sum-exp of each attention row
  float* residual2 = nullptr;  // (N, C)   x + attention branch
  float* ln2_mean = nullptr;   // (N)
  float* ln2_rstd = nullptr;   // (N)
  TypedPtr fch;                // (N, 4C)  fc output (pre-GELU)
  float* residual3 = nullptr;  // (N, C)   block output
  // Kept for the backward instead of recomputed (KernelChoices::recompute); null when recomputed:
  TypedPtr ln1;       // (N, C)   ln_1's output (recompute < 2)
  TypedPtr ln2;       // (N, C)   ln_2's output (recompute < 2)
  TypedPtr fch_gelu;  // (N, 4C)  GELU(fch) (recompute < 1)
  // (N, C) the block's input where a U-net skip enters it (unet_skips): the previous block's
  // output plus the skip's weight times its source block's output; null elsewhere.
  float* skip_input = nullptr;
};

// Bytes of an arena by kind of content, in carving order (the estimator's breakdown). total_bytes
// is the arena's allocation (kinds summed, rounded up like Buffer).
struct ArenaLayout {
  std::vector<std::pair<std::string, int64_t>> by_kind;
  int64_t total_bytes = 0;
  void add(const std::string& kind, int64_t bytes);
};
// The kinds the arenas are cut into.
inline constexpr const char* kArenaEmbedding = "activations: embedding";
inline constexpr const char* kArenaLayerNorm = "activations: layernorm stats";
inline constexpr const char* kArenaQkv = "activations: qkv";
inline constexpr const char* kArenaAttention = "activations: attention out + lse";
inline constexpr const char* kArenaResidual = "activations: residual streams";
inline constexpr const char* kArenaMlp = "activations: mlp (pre-GELU)";
inline constexpr const char* kArenaKept = "activations: kept norm / GELU outputs (recompute < 2)";
inline constexpr const char* kArenaWorking = "activations: per-layer working buffers";
inline constexpr const char* kArenaClassifier = "classifier (lnf, logits chunk, dlnf, losses)";
inline constexpr const char* kArenaScratch = "backward scratch (activation grads)";

// Rows per classifier chunk: a multiple of 64 rows, at most N, of about 16M floats (64 MB) of
// logits, or 64M floats (256 MB, plus 128 MB of bf16 dlogits) for bfloat16. Each chunk reads and
// writes all of dwte once, and the chunk's rows are the inner dimension of its weight-gradient
// product: in bf16 the 124M classifier (B 4, T 1024) took ~1.9 s per step in chunks of 320 rows,
// ~1.85 s in 640 and ~1.54 s in 1280 (docs/benchmarks.md); in float32 1280 rows gained nothing
// (3.09 vs 3.15 s) for 0.18 GiB more, so float32 keeps the small chunk.
int64_t classifier_chunk_rows(int64_t N, int64_t Vp, DType dtype = DType::kF32);

// The layouts Activations::reserve and GradScratch::reserve allocate for N rows (same carving code,
// run without memory), so an estimate from them is what training allocates.
// checkpoint_blocks: one set of per-layer views shared by all layers (valid for the block that ran
// last), and only each layer's residual3 kept per layer (KernelChoices::checkpoint_blocks).
// recompute: KernelChoices::recompute (below 2, each layer's LayerNorm outputs and, below 1, its
// GELU output get views of their own).
ArenaLayout activation_layout(const ModelConfig& config, int64_t N, int64_t chunk_rows = 0,
                              DType dtype = DType::kF32, bool checkpoint_blocks = false,
                              int recompute = 2);
ArenaLayout grad_scratch_layout(const ModelConfig& config, int64_t N, DType dtype = DType::kF32);

class Activations {
 public:
  // Makes the views valid for N = B*T rows (reallocates only when N exceeds the capacity or the
  // classifier chunk or the dtype changes). chunk_rows: rows per classifier chunk, 0 =
  // classifier_chunk_rows. dtype: the activation dtype (the TypedPtr views). space: the memory
  // the arena lives in (a backend's; null: the host's).
  void reserve(const ModelConfig& config, int64_t N, MemoryTracker* tracker, int64_t chunk_rows = 0,
               DType dtype = DType::kF32, bool checkpoint_blocks = false, int recompute = 2,
               MemorySpace* space = nullptr);
  int64_t capacity() const { return capacity_; }

  float* encoded = nullptr;              // (N, C)  dropout(wte[inp] + wpe[t]): the blocks' input
  std::vector<LayerActivations> layers;  // (L)
  // Working buffers shared by all layers (valid only within one layer's forward or backward):
  TypedPtr ln;                // (N, C)   a LayerNorm output (forward; recomputed in backward),
                              //          unless the layer keeps its own (LayerActivations::ln1)
  TypedPtr fch_gelu;          // (N, 4C)  GELU(fch) (forward; recomputed in backward, where
                              //          it then holds d(fch), the GELU's input gradient),
                              //          unless the layer keeps its own
  float* branch = nullptr;    // (N, C)   dropout(attention or MLP output projection)
  TypedPtr lnf;               // (N, C)
  float* lnf_mean = nullptr;  // (N)
  float* lnf_rstd = nullptr;  // (N)
  // The classifier runs over chunks of rows so that the (N, Vp) logits are never held whole (824 MB
  // for GPT-2 124M at B 4, T 1024): logits of chunk_rows rows at a time, turned into dlogits in
  // place, whose products with wte (dlnf) and lnf (dwte) are taken before the next chunk.
  int64_t chunk_rows = 0;         // rows per classifier chunk (classifier_chunk_rows)
  float* logits_chunk = nullptr;  // (chunk_rows, Vp) logits, then dlogits, of one chunk
  TypedPtr dlogits_chunk;         // (chunk_rows, Vp) the dlogits in the activation dtype (the
                                  // float32 logits_chunk itself when that is float32)
  float* dlnf = nullptr;          // (N, C)  gradient of lnf from the fused classifier
  float* losses = nullptr;        // (N)     per-position loss, 0 where the target is ignored

 private:
  Buffer<float> arena_;
  int64_t capacity_ = 0;
  DType dtype_ = DType::kF32;
  bool checkpoint_blocks_ = false;
  int recompute_ = 2;
};

// Scratch gradients of the backward pass (activation grads; parameter grads live in GPT's arena).
class GradScratch {
 public:
  // dtype: the activation dtype; the TypedPtr views hold activation gradients in it (so that a
  // float16 run really stores them in float16, which is what its loss scaling is for).
  void reserve(const ModelConfig& config, int64_t N, MemoryTracker* tracker,
               DType dtype = DType::kF32, MemorySpace* space = nullptr);
  int64_t capacity() const { return capacity_; }

  float* dresidual = nullptr;  // (N, C)  gradient of the residual stream (float32)
  TypedPtr dc;                 // (N, C)  dln / datty
  float* ddrop = nullptr;      // (N, C)  gradient before a dropout; null when dropout == 0
  TypedPtr dbranch;            // (N, C)  gradient of a projection's output in the activation
                               //         dtype; null when that is float32 (no copy needed)
  TypedPtr dfch_gelu;          // (N, 4C) gradient of the GELU output (MLP backward)
  TypedPtr dqkv;               // (N, 3C) gradient of qkv (attention backward): the memory of
                               //         dfch_gelu, which is dead by then
  // (unet_skips: n_layer / 2 of them) each (N, C): skip i's weight times the gradient of the
  // input it enters, added to its source block's output gradient when the backward gets there.
  std::vector<float*> dskip;

 private:
  Buffer<float> arena_;
  int64_t capacity_ = 0;
  DType dtype_ = DType::kF32;
};

}  // namespace nanogpt
