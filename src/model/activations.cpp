// Cuts the activation and gradient-scratch arenas into views (sizes per row count N). The same
// carving, run without memory, is the size function the estimator reports (activation_layout).
#include "model/activations.h"

#include <algorithm>

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
  int64_t used() const { return used_; }

 private:
  float* base_;
  ArenaLayout* layout_;
  int64_t used_ = 0;
};

int64_t chunk_rows_for(const ModelConfig& cfg, int64_t N, int64_t chunk_rows_wanted) {
  return std::min(N, chunk_rows_wanted > 0 ? chunk_rows_wanted
                                           : classifier_chunk_rows(N, cfg.padded_vocab_size()));
}

// The activation arena's layout: the one place its views and their sizes are decided.
void carve_activations(const ModelConfig& cfg, int64_t N, int64_t rows, Carver& c,
                       Activations& a) {
  const int64_t C = cfg.n_embd, Vp = cfg.padded_vocab_size(), NH = cfg.n_head;
  const bool drop = cfg.dropout > 0.0;
  a.encoded = c.take(N * C, kArenaEmbedding);
  a.encoded_drop = drop ? c.take(N * C, kArenaDropout) : nullptr;
  a.layers.assign(cfg.n_layer, LayerActivations{});
  for (LayerActivations& l : a.layers) {
    l.ln1_mean = c.take(N, kArenaLayerNorm);
    l.ln1_rstd = c.take(N, kArenaLayerNorm);
    l.qkv = c.take(N * 3 * C, kArenaQkv);
    l.atty = c.take(N * C, kArenaAttention);
    l.lse = c.take(N * NH, kArenaAttention);
    l.residual2 = c.take(N * C, kArenaResidual);
    l.ln2_mean = c.take(N, kArenaLayerNorm);
    l.ln2_rstd = c.take(N, kArenaLayerNorm);
    l.fch = c.take(N * 4 * C, kArenaMlp);
    l.residual3 = c.take(N * C, kArenaResidual);
  }
  a.ln = c.take(N * C, kArenaWorking);
  a.fch_gelu = c.take(N * 4 * C, kArenaWorking);
  a.branch = c.take(N * C, kArenaWorking);
  a.branch_drop = drop ? c.take(N * C, kArenaDropout) : nullptr;
  a.lnf = c.take(N * C, kArenaClassifier);
  a.lnf_mean = c.take(N, kArenaClassifier);
  a.lnf_rstd = c.take(N, kArenaClassifier);
  a.chunk_rows = rows;
  a.logits_chunk = c.take(rows * Vp, kArenaClassifier);
  a.dlnf = c.take(N * C, kArenaClassifier);
  a.losses = c.take(N, kArenaClassifier);
}

// The gradient scratch arena's layout.
void carve_scratch(const ModelConfig& cfg, int64_t N, Carver& c, GradScratch& g) {
  const int64_t C = cfg.n_embd;
  const bool drop = cfg.dropout > 0.0;
  g.dresidual = c.take(N * C, kArenaScratch);
  g.dc = c.take(N * C, kArenaScratch);
  g.ddrop = drop ? c.take(N * C, kArenaScratch) : nullptr;
  g.dqkv = c.take(N * 3 * C, kArenaScratch);
  g.dfch = c.take(N * 4 * C, kArenaScratch);
  g.dfch_gelu = c.take(N * 4 * C, kArenaScratch);
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

int64_t classifier_chunk_rows(int64_t N, int64_t Vp) {
  constexpr int64_t kChunkFloats = int64_t{16} << 20;
  const int64_t rows = std::max<int64_t>(64, kChunkFloats / std::max<int64_t>(Vp, 1) / 64 * 64);
  return std::min(rows, N);
}

ArenaLayout activation_layout(const ModelConfig& cfg, int64_t N, int64_t chunk_rows) {
  ArenaLayout layout;
  Activations views;
  Carver counter(nullptr, &layout);
  carve_activations(cfg, N, chunk_rows_for(cfg, N, chunk_rows), counter, views);
  layout.total_bytes = buffer_bytes(counter.used());
  return layout;
}

ArenaLayout grad_scratch_layout(const ModelConfig& cfg, int64_t N) {
  ArenaLayout layout;
  GradScratch views;
  Carver counter(nullptr, &layout);
  carve_scratch(cfg, N, counter, views);
  layout.total_bytes = buffer_bytes(counter.used());
  return layout;
}

void Activations::reserve(const ModelConfig& cfg, int64_t N, MemoryTracker* tracker,
                          int64_t chunk_rows_wanted) {
  const int64_t rows = chunk_rows_for(cfg, N, chunk_rows_wanted);
  if (N <= capacity_ && !layers.empty() && rows <= chunk_rows) return;
  Carver counter(nullptr);
  carve_activations(cfg, N, rows, counter, *this);
  arena_ = Buffer<float>();  // free the old arena before allocating the larger one
  arena_ = Buffer<float>(static_cast<size_t>(counter.used()), tracker);
  Carver carver(arena_.data());
  carve_activations(cfg, N, rows, carver, *this);
  capacity_ = N;
}

void GradScratch::reserve(const ModelConfig& cfg, int64_t N, MemoryTracker* tracker) {
  if (N <= capacity_) return;
  Carver counter(nullptr);
  carve_scratch(cfg, N, counter, *this);
  arena_ = Buffer<float>();
  arena_ = Buffer<float>(static_cast<size_t>(counter.used()), tracker);
  Carver carver(arena_.data());
  carve_scratch(cfg, N, carver, *this);
  capacity_ = N;
}

}  // namespace nanogpt
