// Muon: the momentum and update passes around Newton-Schulz, AdamW for the rest, and the
// data-parallel split of the orthogonalizations.
#include "optim/muon.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/check.h"

namespace nanogpt {

namespace {

// Element passes over fewer elements run on one thread (a parallel region costs more than them).
constexpr int64_t kParallelMin = 1 << 15;

// The largest hidden matrix's elements and the largest smaller side.
std::pair<int64_t, int64_t> largest_matrix(const ParamTable& table) {
  int64_t max_numel = 0, max_small = 0;
  for (const auto& s : table.specs()) {
    if (!s.hidden_matrix) continue;
    CHECK(s.shape.size() == 2,
          "Muon: parameter '{}' is marked hidden_matrix but has {} dims; Muon orthogonalizes "
          "2-D matrices only (a ZeRO-1 shard or a slice of the table flattens them)",
          s.name, s.shape.size());
    max_numel = std::max(max_numel, s.numel);
    max_small = std::max(max_small, std::min(s.shape[0], s.shape[1]));
  }
  return {max_numel, max_small};
}

int64_t aligned_bytes(int64_t n, int64_t element_bytes) {
  return n == 0 ? 0 : (n * element_bytes + 63) / 64 * 64;  // Buffer's allocation
}

}  // namespace

int64_t muon_workspace_bytes(const ParamTable& table, DType matmul_dtype) {
  const auto [numel, small] = largest_matrix(table);
  // direction_, ortho_; NewtonSchulz's x_, bx_ and a_, aa_, b_ (+ bfloat16 copies of x, a, b).
  int64_t bytes = 4 * aligned_bytes(numel, 4) + 3 * aligned_bytes(small * small, 4);
  if (matmul_dtype == DType::kBF16) {
    bytes += aligned_bytes(numel, 2) + 2 * aligned_bytes(small * small, 2);
  }
  return bytes;
}

Muon::Muon(const ParamTable& table, const OptimConfig& config, MemoryTracker* tracker,
           const OptimizerRuntime& runtime)
    : table_(table),
      config_(config),
      sharing_(runtime.sharing),
      adamw_(table, config.beta1, config.beta2, config.weight_decay, 1e-8, tracker,
             /*skip_hidden_matrices=*/true) {
  CHECK(sharing_.world >= 1 && sharing_.rank >= 0 && sharing_.rank < sharing_.world,
        "Muon: rank {} of {} ranks is not a valid rank", sharing_.rank, sharing_.world);
  CHECK(sharing_.world == 1 || sharing_.broadcast,
        "Muon: {} ranks share the orthogonalizations but no broadcast was given", sharing_.world);
  const auto [max_numel, max_small] = largest_matrix(table_);
  for (const auto& s : table_.specs()) {
    if (s.hidden_matrix) matrices_.push_back(&s);
  }
  KernelContext* ctx = runtime.kernels;
  if (!ctx) {
    owned_ctx_ = std::make_unique<KernelContext>();
    ctx = owned_ctx_.get();
  }
  newton_schulz_ =
      std::make_unique<NewtonSchulz>(*ctx, runtime.matmul_dtype, max_numel, max_small, tracker);
  direction_ = Buffer<float>(static_cast<size_t>(max_numel), tracker);
  ortho_ = Buffer<float>(static_cast<size_t>(max_numel), tracker);
}

double Muon::momentum_at(int64_t k) const {
  const double mu = config_.muon_momentum;
  const int64_t warm = config_.muon_momentum_warmup_iters;
  if (warm <= 0 || k >= warm) return mu;
  const double frac = static_cast<double>(k) / static_cast<double>(warm);
  return config_.muon_momentum_start + (mu - config_.muon_momentum_start) * frac;
}

void Muon::step(float* params, const float* grads, double lr) {
  // AdamW's bias correction counts the same steps as Muon (restored through set_steps on us).
  adamw_.set_steps(steps_);
  adamw_.step(params, grads, lr);
  const float mu = static_cast<float>(momentum_at(steps_));
  ++steps_;
  const double lr_muon = config_.muon_learning_rate * lr / config_.learning_rate;
  const float keep = static_cast<float>(1.0 - lr_muon * config_.muon_weight_decay);
  const bool nesterov = config_.muon_nesterov;
  const int ns_steps = static_cast<int>(config_.muon_ns_steps);
  float* buf_all = adamw_.state_tensors()[0].data;  // "m": the hidden matrices' slots are ours
  float* d = direction_.data();
  float* o = ortho_.data();
  for (size_t i = 0; i < matrices_.size(); ++i) {
    const ParamSpec& s = *matrices_[i];
    const int64_t n = s.numel, rows = s.shape[0], cols = s.shape[1];
    const float* g = grads + s.offset;  // (rows, cols)
    float* buf = buf_all + s.offset;    // (rows, cols)
#pragma omp parallel for simd schedule(static) if (n >= kParallelMin)
    for (int64_t j = 0; j < n; ++j) {
      const float b = mu * buf[j] + g[j];
      buf[j] = b;
      d[j] = nesterov ? g[j] + mu * b : b;
    }
    if (static_cast<int>(i % static_cast<size_t>(sharing_.world)) != sharing_.rank) continue;
    newton_schulz_->orthogonalize(o, d, rows, cols, ns_steps);
    const float step = static_cast<float>(
        lr_muon * std::sqrt(std::max(1.0, static_cast<double>(rows) / static_cast<double>(cols))));
    float* p = params + s.offset;  // (rows, cols)
#pragma omp parallel for simd schedule(static) if (n >= kParallelMin)
    for (int64_t j = 0; j < n; ++j) p[j] = p[j] * keep - step * o[j];
  }
  if (sharing_.world > 1) {
    for (size_t i = 0; i < matrices_.size(); ++i) {
      sharing_.broadcast(params + matrices_[i]->offset, matrices_[i]->numel,
                         static_cast<int>(i % static_cast<size_t>(sharing_.world)));
    }
  }
}

}  // namespace nanogpt
