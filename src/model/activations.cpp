// Cuts the activation and gradient-scratch arenas into views (sizes per row count N).
#include "model/activations.h"

#include <algorithm>

namespace nanogpt {

namespace {

// Hands out consecutive 64-byte aligned slices. With base == null it only counts.
class Carver {
 public:
  explicit Carver(float* base) : base_(base) {}
  float* take(int64_t n) {
    float* p = base_ ? base_ + used_ : nullptr;
    used_ += (n + 15) / 16 * 16;
    return p;
  }
  int64_t used() const { return used_; }

 private:
  float* base_;
  int64_t used_ = 0;
};

}  // namespace

int64_t classifier_chunk_rows(int64_t N, int64_t Vp) {
  constexpr int64_t kChunkFloats = int64_t{16} << 20;
  const int64_t rows = std::max<int64_t>(64, kChunkFloats / std::max<int64_t>(Vp, 1) / 64 * 64);
  return std::min(rows, N);
}

void Activations::reserve(const ModelConfig& cfg, int64_t N, MemoryTracker* tracker,
                          int64_t chunk_rows_wanted) {
  const int64_t C = cfg.n_embd, Vp = cfg.padded_vocab_size(), NH = cfg.n_head;
  const int64_t rows =
      std::min(N, chunk_rows_wanted > 0 ? chunk_rows_wanted : classifier_chunk_rows(N, Vp));
  if (N <= capacity_ && !layers.empty() && rows <= chunk_rows) return;
  const bool drop = cfg.dropout > 0.0;
  auto carve = [&](Carver& c) {
    encoded = c.take(N * C);
    encoded_drop = drop ? c.take(N * C) : nullptr;
    layers.assign(cfg.n_layer, LayerActivations{});
    for (LayerActivations& a : layers) {
      a.ln1_mean = c.take(N);
      a.ln1_rstd = c.take(N);
      a.qkv = c.take(N * 3 * C);
      a.atty = c.take(N * C);
      a.lse = c.take(N * NH);
      a.residual2 = c.take(N * C);
      a.ln2_mean = c.take(N);
      a.ln2_rstd = c.take(N);
      a.fch = c.take(N * 4 * C);
      a.residual3 = c.take(N * C);
    }
    ln = c.take(N * C);
    fch_gelu = c.take(N * 4 * C);
    branch = c.take(N * C);
    branch_drop = drop ? c.take(N * C) : nullptr;
    lnf = c.take(N * C);
    lnf_mean = c.take(N);
    lnf_rstd = c.take(N);
    chunk_rows = rows;
    logits_chunk = c.take(chunk_rows * Vp);
    dlnf = c.take(N * C);
    losses = c.take(N);
  };
  Carver counter(nullptr);
  carve(counter);
  arena_ = Buffer<float>();  // free the old arena before allocating the larger one
  arena_ = Buffer<float>(static_cast<size_t>(counter.used()), tracker);
  Carver carver(arena_.data());
  carve(carver);
  capacity_ = N;
}

void GradScratch::reserve(const ModelConfig& cfg, int64_t N, MemoryTracker* tracker) {
  if (N <= capacity_) return;
  const int64_t C = cfg.n_embd;
  const bool drop = cfg.dropout > 0.0;
  auto carve = [&](Carver& c) {
    dresidual = c.take(N * C);
    dc = c.take(N * C);
    ddrop = drop ? c.take(N * C) : nullptr;
    dqkv = c.take(N * 3 * C);
    dfch = c.take(N * 4 * C);
    dfch_gelu = c.take(N * 4 * C);
  };
  Carver counter(nullptr);
  carve(counter);
  arena_ = Buffer<float>();
  arena_ = Buffer<float>(static_cast<size_t>(counter.used()), tracker);
  Carver carver(arena_.data());
  carve(carver);
  capacity_ = N;
}

}  // namespace nanogpt
