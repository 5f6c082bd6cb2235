// Muon: the momentum and update passes around Newton-Schulz, AdamW for the rest, and the
// data-parallel split of the orthogonalizations.
#include "optim/muon.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/check.h"
#include "kernels/cpu_backend.h"

namespace nanogpt {

namespace {


// Products of at most this many multiply-adds: newton_schulz_on_one_thread.
constexpr int64_t kOneThreadMaxMacs = int64_t{1} << 24;

int resolve_threads(int threads) { return threads > 0 ? threads : omp_get_max_threads(); }

// The largest hidden matrix's elements and the largest smaller side, of all of them or of the
// small ones (newton_schulz_on_one_thread) only.
std::pair<int64_t, int64_t> largest_matrix(const ParamTable& table, bool small_only = false) {
  int64_t max_numel = 0, max_small = 0;
  for (const auto& s : table.specs()) {
    if (!s.hidden_matrix) continue;
    if (small_only && !newton_schulz_on_one_thread(s.shape[0], s.shape[1])) continue;
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

// lr * sqrt(max(1, rows / cols)): the published shape factor.
float scaled_step(double lr_muon, const ParamSpec& s) {
  const double ratio = static_cast<double>(s.shape[0]) / static_cast<double>(s.shape[1]);
  return static_cast<float>(lr_muon * std::sqrt(std::max(1.0, ratio)));
}

}  // namespace

bool newton_schulz_on_one_thread(int64_t rows, int64_t cols) {
  const int64_t r = std::min(rows, cols), c = std::max(rows, cols);
  return r * r * c <= kOneThreadMaxMacs;
}

int64_t muon_workspace_bytes(const ParamTable& table, DType matmul_dtype, bool zero1,
                             int threads) {
  // A worker's direction (the whole arena for the whole-table worker with ZeRO-1) and ortho;
  // NewtonSchulz's x_, bx_ and a_, aa_, b_ (+ bfloat16 copies of x, a, b).
  auto worker = [&](int64_t numel, int64_t small, int64_t direction) {
    int64_t bytes = aligned_bytes(direction, 4) + 3 * aligned_bytes(numel, 4) +
                    3 * aligned_bytes(small * small, 4);
    if (matmul_dtype == DType::kBF16) {
      bytes += aligned_bytes(numel, 2) + 2 * aligned_bytes(small * small, 2);
    }
    return bytes;
  };
  const auto [numel, small] = largest_matrix(table);
  int64_t bytes = worker(numel, small, zero1 ? table.total_numel() : numel);
  const auto [numel1, small1] = largest_matrix(table, /*small_only=*/true);
  if (resolve_threads(threads) > 1 && numel1 > 0) {
    bytes += resolve_threads(threads) * worker(numel1, small1, numel1);
  }
  return bytes;
}

double muon_flops_per_step(const ParamTable& table, int64_t ns_steps) {
  double flops = 0;
  for (const auto& s : table.specs()) {
    if (s.hidden_matrix) flops += newton_schulz_flops(s.shape[0], s.shape[1], ns_steps);
  }
  return flops;
}

Muon::Muon(const ParamTable& table, const OptimConfig& config, MemoryTracker* tracker,
           const OptimizerRuntime& runtime)
    : Optimizer(runtime.backend),
      table_(table),
      config_(config),
      sharing_(runtime.sharing),
      shard_(runtime.shard),
      adamw_(shard_.enabled() ? table.slice(shard_.begin, shard_.end) : table, config.beta1,
             config.beta2, config.weight_decay, 1e-8, tracker, /*skip_hidden_matrices=*/true,
             &backend()) {
  CHECK(sharing_.world >= 1 && sharing_.rank >= 0 && sharing_.rank < sharing_.world,
        "Muon: rank {} of {} ranks is not a valid rank", sharing_.rank, sharing_.world);
  adamw_.set_lr_factors(config);
  CHECK(sharing_.world == 1 || sharing_.broadcast,
        "Muon: {} ranks share the orthogonalizations but no broadcast was given", sharing_.world);
  for (const auto& s : table_.specs()) {
    if (s.hidden_matrix) matrices_.push_back(&s);
  }
  if (shard_.enabled()) {
    CHECK(sharing_.all_gather && static_cast<int>(shard_.counts.size()) == sharing_.world,
          "Muon: a ZeRO-1 shard needs an all-gather and {} shard sizes, got {}", sharing_.world,
          shard_.counts.size());
  }
  // Small matrices one a thread, each on a CpuBackend of its own, where the backend is the host's;
  // a device's backend takes every matrix in turn.
  const int threads = backend().host_addressable() ? resolve_threads(runtime.threads) : 1;
  for (size_t i = 0; i < matrices_.size(); ++i) {
    const bool small =
        threads > 1 && newton_schulz_on_one_thread(matrices_[i]->shape[0], matrices_[i]->shape[1]);
    (small ? small_ : large_).push_back(i);
  }
  // Largest first, so that the threads taking them in turn end together (ties in table order).
  std::stable_sort(small_.begin(), small_.end(), [&](size_t a, size_t b) {
    return matrices_[a]->numel > matrices_[b]->numel;
  });
  for (size_t i : small_) {
    if (owner(i) == sharing_.rank) small_owned_.push_back(i);
  }
  for (size_t i : large_) {
    if (owner(i) == sharing_.rank) large_owned_.push_back(i);
  }
  auto make_worker = [&](Worker& w, Backend& b, int64_t numel, int64_t small,
                         int64_t direction) {
    w.backend = &b;
    w.newton_schulz =
        std::make_unique<NewtonSchulz>(b, runtime.matmul_dtype, numel, small, tracker);
    w.direction = Buffer<float>(static_cast<size_t>(direction), tracker, &b);
    w.ortho = Buffer<float>(static_cast<size_t>(numel), tracker, &b);
  };
  const auto [max_numel, max_small] = largest_matrix(table_);
  make_worker(whole_, backend(), max_numel, max_small,
              shard_.enabled() ? table_.total_numel() : max_numel);
  if (!small_.empty()) {
    const auto [numel1, small1] = largest_matrix(table_, /*small_only=*/true);
    threads_.resize(static_cast<size_t>(threads));
    for (Worker& w : threads_) {
      w.own_ctx = std::make_unique<CpuBackend>();
      make_worker(w, *w.own_ctx, numel1, small1, numel1);
    }
  }
}

template <class Fn>
void Muon::for_each_matrix(const std::vector<size_t>& small, const std::vector<size_t>& large,
                           Fn&& fn) {
  if (!small.empty()) {
    const int n = static_cast<int>(small.size());
#pragma omp parallel num_threads(static_cast<int>(threads_.size()))
    {
      Worker& w = threads_[static_cast<size_t>(omp_get_thread_num())];
#pragma omp for schedule(dynamic, 1)
      for (int k = 0; k < n; ++k) fn(small[static_cast<size_t>(k)], w);
    }
  }
  for (size_t i : large) fn(i, whole_);
}

double Muon::momentum_at(int64_t k) const {
  const double mu = config_.muon_momentum;
  const int64_t warm = config_.muon_momentum_warmup_iters;
  if (warm <= 0 || k >= warm) return mu;
  const double frac = static_cast<double>(k) / static_cast<double>(warm);
  return config_.muon_momentum_start + (mu - config_.muon_momentum_start) * frac;
}

double Muon::flops_per_step() const {
  double flops = 0;
  for (size_t i = 0; i < matrices_.size(); ++i) {
    if (owner(i) != sharing_.rank) continue;
    flops +=
        newton_schulz_flops(matrices_[i]->shape[0], matrices_[i]->shape[1], config_.muon_ns_steps);
  }
  return flops;
}

void Muon::step(float* params, const float* grads, double lr) {
  // AdamW's bias correction counts the same steps as Muon (restored through set_steps on us).
  adamw_.set_steps(steps_);
  adamw_.step(params, grads, lr);
  const float mu = static_cast<float>(momentum_at(steps_));
  ++steps_;
  const double lr_muon = config_.muon_learning_rate * lr / config_.learning_rate;
  if (shard_.enabled()) {
    step_sharded(params, grads, mu, lr_muon);
  } else {
    step_whole(params, grads, mu, lr_muon);
  }
}

void Muon::step_matrix(size_t i, Worker& w, float* params, const float* grads, float* momentum,
                       float mu, double lr_muon) {
  const ParamSpec& s = *matrices_[i];  // (rows, cols) at s.offset in every arena
  float* d = w.direction.data();
  w.backend->muon_momentum(momentum + s.offset, d, grads + s.offset, s.numel, mu,
                           config_.muon_nesterov);
  if (owner(i) != sharing_.rank) return;
  const float keep = static_cast<float>(1.0 - lr_muon * config_.muon_weight_decay);
  w.newton_schulz->orthogonalize(w.ortho.data(), d, s.shape[0], s.shape[1],
                                 static_cast<int>(config_.muon_ns_steps));
  w.backend->muon_update(params + s.offset, w.ortho.data(), s.numel, keep,
                         scaled_step(lr_muon, s));
}

void Muon::step_whole(float* params, const float* grads, float mu, double lr_muon) {
  // Every rank updates every momentum buffer, so every matrix passes through step_matrix.
  float* momentum = adamw_.state_tensors()[0].data;  // "m": the hidden matrices' slots are ours
  for_each_matrix(small_, large_, [&](size_t i, Worker& w) {
    step_matrix(i, w, params, grads, momentum, mu, lr_muon);
  });
  if (sharing_.world > 1) {
    for (size_t i = 0; i < matrices_.size(); ++i) {
      sharing_.broadcast(params + matrices_[i]->offset, matrices_[i]->numel, owner(i));
    }
  }
}

void Muon::step_sharded(float* params, const float* grads, float mu, double lr_muon) {
  const float keep = static_cast<float>(1.0 - lr_muon * config_.muon_weight_decay);
  const int ns_steps = static_cast<int>(config_.muon_ns_steps);
  const int64_t begin = shard_.begin, end = shard_.end;
  float* buf = adamw_.state_tensors()[0].data;  // (end - begin) "m" of the shard
  float* whole = whole_.direction.data();       // (total_numel)
  // The part of matrix s inside the shard: arena elements [lo, hi).
  auto overlap = [&](const ParamSpec& s) {
    return std::pair{std::max(begin, s.offset), std::min(end, s.offset + s.numel)};
  };
  for (const ParamSpec* s : matrices_) {
    const auto [lo, hi] = overlap(*s);
    if (lo >= hi) continue;
    backend().muon_momentum(buf + (lo - begin), whole + lo, grads + (lo - begin), hi - lo, mu,
                            config_.muon_nesterov);
  }
  sharing_.all_gather(whole, shard_.counts);  // every matrix's D, whole, on every rank
  for_each_matrix(small_owned_, large_owned_, [&](size_t i, Worker& w) {
    const ParamSpec& s = *matrices_[i];
    w.newton_schulz->orthogonalize(w.ortho.data(), whole + s.offset, s.shape[0], s.shape[1],
                                   ns_steps);
    w.backend->copy_bytes(whole + s.offset, w.ortho.data(),
                          static_cast<size_t>(s.numel) * sizeof(float));
  });
  if (sharing_.world > 1) {
    for (size_t i = 0; i < matrices_.size(); ++i) {
      sharing_.broadcast(whole + matrices_[i]->offset, matrices_[i]->numel, owner(i));
    }
  }
  for (const ParamSpec* s : matrices_) {
    const auto [lo, hi] = overlap(*s);
    if (lo >= hi) continue;
    backend().muon_update(params + (lo - begin), whole + lo, hi - lo, keep,
                          scaled_step(lr_muon, *s));
  }
}

}  // namespace nanogpt
