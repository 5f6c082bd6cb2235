// Muon (Keller Jordan's published MomentUm Orthogonalized by Newton-schulz) for the hidden
// matrices (ParamSpec::hidden_matrix: the four matmul weights of each block), AdamW for every
// other tensor (embeddings, head, gains, biases), each group with its own learning rate and weight
// decay (within AdamW's group, the embeddings and the head at embedding_learning_rate /
// head_learning_rate when set: AdamW::set_lr_factors). Per hidden matrix W (rows, cols) with gradient G, at optimizer step k (0-based):
//   mu_k = muon_momentum, or during the momentum warmup muon_momentum_start + (muon_momentum -
//          muon_momentum_start) * k / muon_momentum_warmup_iters
//   buf = mu_k * buf + G;  D = G + mu_k * buf (Nesterov) or buf
//   O = NewtonSchulz(D, muon_ns_steps) (optim/newton_schulz.h)
//   W *= 1 - lr_muon * muon_weight_decay;  W -= lr_muon * sqrt(max(1, rows / cols)) * O
// with lr_muon = muon_learning_rate * lr / learning_rate (the schedule's factor, lr the rate the
// trainer passes, which is the AdamW group's). State: AdamW's arenas "m" and "v" in the parameter
// layout; Muon's momentum buffer lives in the "m" slots of the hidden matrices (AdamW leaves those
// slots alone), so checkpoints, the estimator and state counts are those of AdamW.
// Data parallel (RankSharing, world W > 1): every rank updates every momentum buffer (the
// gradients are the same on all ranks), hidden matrix i (table order) is orthogonalized and
// updated on rank i % W only, then broadcast from there.
// ZeRO-1 (ArenaShard): each rank holds the state of its contiguous shard of the arena, which may
// cut matrices. Each rank updates the momentum of its shard and writes the direction D there into
// a whole-arena buffer, which is all-gathered; matrix i is orthogonalized on rank i % W and its O
// broadcast (into the same buffer); each rank then updates the params of its shard. The values
// are those of the unsharded step: the element passes are the same functions.
// Threads: a matrix small enough (newton_schulz_on_one_thread) is taken through momentum,
// orthogonalization and update by one thread alone, the threads sharing out the small matrices
// (split over the threads, each of their products costs more in synchronization than it saves);
// larger ones run one after another on all threads. Every product is computed in the same order
// either way, so the values do not depend on which thread takes a matrix.
#pragma once

#include <memory>

#include "core/buffer.h"
#include "kernels/cpu_backend.h"
#include "optim/adamw.h"
#include "optim/newton_schulz.h"
#include "optim/optimizer.h"

namespace nanogpt {

class Muon : public Optimizer {
 public:
  // config: validated, optimizer 'muon' (its AdamW keys and the muon_* keys).
  Muon(const ParamTable& table, const OptimConfig& config, MemoryTracker* tracker = nullptr,
       const OptimizerRuntime& runtime = {});

  void step(float* params, const float* grads, double lr) override;
  std::string name() const override { return "muon"; }
  // Floats of the params / grads it steps: the shard's with an ArenaShard, else the arena's.
  int64_t numel() const override {
    return shard_.enabled() ? shard_.end - shard_.begin : table_.total_numel();
  }
  // {"m", "v"}: see the top of this file.
  std::vector<OptimizerStateTensor> state_tensors() override { return adamw_.state_tensors(); }

  // Newton-Schulz's matmuls on this rank's matrices (newton_schulz_flops).
  double flops_per_step() const override;

  // The Muon momentum at optimizer step k (0-based), warmup included.
  double momentum_at(int64_t k) const;

 private:
  void step_whole(float* params, const float* grads, float mu, double lr_muon);
  void step_sharded(float* params, const float* grads, float mu, double lr_muon);
  int owner(size_t matrix) const { return static_cast<int>(matrix % sharing_.world); }
  // Matrix i (matrices_ order) through momentum (its buffer in `momentum`, the "m" arena),
  // orthogonalization (on this rank's matrices) and update in the whole step, in w's buffers.
  struct Worker;
  void step_matrix(size_t i, Worker& w, float* params, const float* grads, float* momentum,
                   float mu, double lr_muon);
  // Runs fn(i, worker) for every i in `small` spread over the threads (one worker each), then for
  // every i in `large` on all threads with the whole-table worker.
  template <class Fn>
  void for_each_matrix(const std::vector<size_t>& small, const std::vector<size_t>& large, Fn&& fn);

  ParamTable table_;  // the whole table (whole matrices), also with a shard
  OptimConfig config_;
  RankSharing sharing_;
  ArenaShard shard_;
  AdamW adamw_;                               // the other tensors; owns the state arenas
  std::vector<const ParamSpec*> matrices_;    // the hidden matrices, table order
  // Indices into matrices_: those one thread takes whole (largest first: the threads take them
  // in turn) and the others; *_owned_: of those, the ones this rank orthogonalizes.
  std::vector<size_t> small_, large_, small_owned_, large_owned_;
  // What a thread needs to take a matrix alone: Newton-Schulz and its workspaces on a CpuBackend
  // of its own (the matmul ops' scratch lives in it) or, for the whole-table worker, on the
  // optimizer's backend, and buffers for D and O in that backend's memory.
  struct Worker {
    std::unique_ptr<CpuBackend> own_ctx;  // the small matrices' threads (host backends only)
    Backend* backend = nullptr;           // own_ctx, or the optimizer's backend
    std::unique_ptr<NewtonSchulz> newton_schulz;
    Buffer<float> direction;  // (its largest matrix) D; the whole-table worker's with a shard:
                              // (total_numel) D, then O, of every matrix at its arena offset
    Buffer<float> ortho;      // (its largest matrix) NewtonSchulz(D)
  };
  Worker whole_;                 // the large matrices, on all threads (the runtime's context)
  std::vector<Worker> threads_;  // one per thread for the small ones (none with one thread)
};

// Whether Muon takes a (rows, cols) matrix through its update on one thread: its Newton-Schulz
// products have at most 2^24 multiply-adds (up to 128 x 1024 or 256 x 256; the speedrun's C 128
// matrices, not the baby GPT's C 384 nor GPT-2's, which the threads split well).
bool newton_schulz_on_one_thread(int64_t rows, int64_t cols);

// Bytes Muon allocates besides the two state arenas (its workspaces and Newton-Schulz's, sized by
// the largest hidden matrix of `table`, and with `threads` > 1 one set per thread for the small
// matrices; with a ZeRO-1 shard the whole-arena direction buffer), for matmuls in `matmul_dtype`:
// what the estimator counts.
int64_t muon_workspace_bytes(const ParamTable& table, DType matmul_dtype, bool zero1,
                             int threads);

// Newton-Schulz matmul FLOPs of one step over every hidden matrix of `table` (all ranks together).
double muon_flops_per_step(const ParamTable& table, int64_t ns_steps);

}  // namespace nanogpt
