// Cuts the activation and gradient-scratch arenas into views (sizes per row count N). The same
// carving, run without memory, is the size function the estimator reports (activation_layout).
#include "model/activations.h"

#include <algorithm>

#include "model/architecture.h"

namespace nanogpt {

namespace {

// Hands out consecutive 64-byte aligned slices. With base == null it only counts; with a layout it
// also records each slice's bytes under its kind (the estimator's breakdown).
class Carver {
 public:
  explicit Carver(float* base, ArenaLayout* layout = nullptr) : base_(base), layout_(layout) {}
  float* take(int64_t n, const char* kind) {
    float* p = base_ ? base_ + used_ : nullptr;
    const int64_t floats = (n + 15) / 16 * 16;
    used_ += floats;
    if (layout_) layout_->add(kind, floats * static_cast<int64_t>(sizeof(float)));
    return p;
  }
  // n elements of `dtype` (a float view when that is float32).
  TypedPtr take(int64_t n, DType dtype, const char* kind) {
    const int64_t floats = (n * static_cast<int64_t>(dtype_size(dtype)) + 3) / 4;
    return {take(floats, kind), dtype};
  }
  int64_t used() const { return used_; }

 private:
  float* base_;
  ArenaLayout* layout_;
  int64_t used_ = 0;
};

int64_t chunk_rows_for(const ModelConfig& cfg, int64_t N, int64_t chunk_rows_wanted, DType dtype) {
  return std::min(N, chunk_rows_wanted > 0
                         ? chunk_rows_wanted
                         : classifier_chunk_rows(N, cfg.padded_vocab_size(), dtype));
}

// The activation arena's layout: the one place its views and their sizes are decided.
// t: the activation dtype of the TypedPtr views.
void carve_activations(const ModelConfig& cfg, int64_t N, int64_t rows, DType t, bool checkpoint,
                       int recompute, Carver& c, Activations& a) {
  const int64_t C = cfg.n_embd, Vp = cfg.padded_vocab_size(), NH = cfg.n_head;
  a.encoded = c.take(N * C, kArenaEmbedding);
  a.layers.assign(cfg.n_layer, LayerActivations{});
  // Block checkpointing: every layer's views but residual3 alias layer 0's.
  const int carved_layers = checkpoint ? std::min(cfg.n_layer, 1) : cfg.n_layer;
  for (int i = 0; i < carved_layers; ++i) {
    LayerActivations& l = a.layers[i];
    l.ln1_mean = c.take(N, kArenaLayerNorm);
    l.ln1_rstd = c.take(N, kArenaLayerNorm);
    l.qkv = c.take(N * 3 * C, t, kArenaQkv);
    l.qk_rstd = cfg.qk_norm ? c.take(N * 2 * NH, kArenaQkv) : nullptr;
    l.atty = c.take(N * C, t, kArenaAttention);
    l.lse = c.take(N * NH, kArenaAttention);
    l.residual2 = c.take(N * C, kArenaResidual);
    l.ln2_mean = c.take(N, kArenaLayerNorm);
    l.ln2_rstd = c.take(N, kArenaLayerNorm);
    l.fch = c.take(N * 4 * C, t, kArenaMlp);
    l.residual3 = c.take(N * C, kArenaResidual);
    if (!checkpoint && recompute < 2) {  // (block checkpointing recomputes whole blocks)
      l.ln1 = c.take(N * C, t, kArenaKept);
      l.ln2 = c.take(N * C, t, kArenaKept);
    }
    if (!checkpoint && recompute < 1) l.fch_gelu = c.take(N * 4 * C, t, kArenaKept);
  }
  for (int i = carved_layers; i < cfg.n_layer; ++i) {
    a.layers[i] = a.layers[0];
    a.layers[i].residual3 = c.take(N * C, kArenaResidual);
  }
  // U-net skips: the inputs they make are kept per block (with block checkpointing too).
  for (int i = 0; i < cfg.n_layer; ++i) {
    const bool skip = cfg.unet_skips && unet_skip_into(cfg.n_layer, i) >= 0;
    a.layers[i].skip_input = skip ? c.take(N * C, kArenaResidual) : nullptr;
  }
  a.ln = c.take(N * C, t, kArenaWorking);
  a.fch_gelu = c.take(N * 4 * C, t, kArenaWorking);
  a.branch = c.take(N * C, kArenaWorking);
  a.lnf = c.take(N * C, t, kArenaClassifier);
  a.lnf_mean = c.take(N, kArenaClassifier);
  a.lnf_rstd = c.take(N, kArenaClassifier);
  a.chunk_rows = rows;
  a.logits_chunk = c.take(rows * Vp, kArenaClassifier);
  a.dlogits_chunk =
      t == DType::kF32 ? TypedPtr(a.logits_chunk) : c.take(rows * Vp, t, kArenaClassifier);
  a.dlnf = c.take(N * C, kArenaClassifier);
  a.losses = c.take(N, kArenaClassifier);
}

// The gradient scratch arena's layout.
void carve_scratch(const ModelConfig& cfg, int64_t N, DType t, Carver& c, GradScratch& g) {
  const int64_t C = cfg.n_embd;
  const bool drop = cfg.dropout > 0.0;
  g.dresidual = c.take(N * C, kArenaScratch);
  g.dc = c.take(N * C, t, kArenaScratch);
  g.ddrop = drop ? c.take(N * C, kArenaScratch) : nullptr;
  g.dbranch = t == DType::kF32 ? TypedPtr() : c.take(N * C, t, kArenaScratch);
  // d(GELU output) is dead once the GELU backward has read it, before the attention's backward
  // writes dqkv: one region serves both.
  g.dfch_gelu = c.take(N * 4 * C, t, kArenaScratch);
  g.dqkv = g.dfch_gelu;
  g.dskip.assign(cfg.unet_skips ? unet_skip_count(cfg.n_layer) : 0, nullptr);
  for (float*& d : g.dskip) d = c.take(N * C, kArenaScratch);
}

// Bytes of a Buffer<float> of n floats (Buffer rounds up to 64 bytes).
int64_t buffer_bytes(int64_t floats) { return (floats * 4 + 63) / 64 * 64; }

}  // namespace

void ArenaLayout::add(const std::string& kind, int64_t bytes) {
  for (auto& [k, b] : by_kind) {
    if (k == kind) {
      b += bytes;
      total_bytes += bytes;
      return;
    }
  }
  by_kind.emplace_back(kind, bytes);
  total_bytes += bytes;
}

int64_t classifier_chunk_rows(int64_t N, int64_t Vp, DType dtype) {
  const int64_t kChunkFloats = (dtype == DType::kBF16 ? int64_t{64} : int64_t{16}) << 20;
  const int64_t rows = std::max<int64_t>(64, kChunkFloats / std::max<int64_t>(Vp, 1) / 64 * 64);
  return std::min(rows, N);
}

ArenaLayout activation_layout(const ModelConfig& cfg, int64_t N, int64_t chunk_rows, DType dtype,
                              bool checkpoint_blocks, int recompute) {
  ArenaLayout layout;
  Activations views;
  Carver counter(nullptr, &layout);
  carve_activations(cfg, N, chunk_rows_for(cfg, N, chunk_rows, dtype), dtype, checkpoint_blocks,
                    recompute, counter, views);
  layout.total_bytes = buffer_bytes(counter.used());
  return layout;
}

ArenaLayout grad_scratch_layout(const ModelConfig& cfg, int64_t N, DType dtype) {
  ArenaLayout layout;
  GradScratch views;
  Carver counter(nullptr, &layout);
  carve_scratch(cfg, N, dtype, counter, views);
  layout.total_bytes = buffer_bytes(counter.used());
  return layout;
}

void Activations::reserve(const ModelConfig& cfg, int64_t N, MemoryTracker* tracker,
                          int64_t chunk_rows_wanted, DType dtype, bool checkpoint_blocks,
                          int recompute, MemorySpace* space) {
  const int64_t rows = chunk_rows_for(cfg, N, chunk_rows_wanted, dtype);
  if (N <= capacity_ && !layers.empty() && rows <= chunk_rows && dtype == dtype_ &&
      checkpoint_blocks == checkpoint_blocks_ && recompute == recompute_) {
    return;
  }
  Carver counter(nullptr);
  carve_activations(cfg, N, rows, dtype, checkpoint_blocks, recompute, counter, *this);
  arena_ = Buffer<float>();  // free the old arena before allocating the larger one
  arena_ = Buffer<float>(static_cast<size_t>(counter.used()), tracker, space);
  Carver carver(arena_.data());
  carve_activations(cfg, N, rows, dtype, checkpoint_blocks, recompute, carver, *this);
  capacity_ = N;
  dtype_ = dtype;
  checkpoint_blocks_ = checkpoint_blocks;
  recompute_ = recompute;
}

void GradScratch::reserve(const ModelConfig& cfg, int64_t N, MemoryTracker* tracker, DType dtype,
                          MemorySpace* space) {
  if (N <= capacity_ && dtype == dtype_) return;
  Carver counter(nullptr);
  carve_scratch(cfg, N, dtype, counter, *this);
  arena_ = Buffer<float>();
  arena_ = Buffer<float>(static_cast<size_t>(counter.used()), tracker, space);
  Carver carver(arena_.data());
  carve_scratch(cfg, N, dtype, carver, *this);
  capacity_ = N;
  dtype_ = dtype;
}

}  // namespace nanogpt
