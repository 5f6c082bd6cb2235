// Zero1: ZeRO stage 1 for data-parallel AdamW/SGD. The parameter arena is cut into one contiguous
// shard per rank; each rank keeps the optimizer state of its shard only (1/N of it). A step:
// reduce-scatter the gradients (each rank gets the sum of its shard), global gradient norm from the
// shards' sums of squares (clipping as clip_grad_norm), update the own shard, all-gather the
// parameters. Checkpoints stay whole: the state is gathered to rank 0 to save, and a whole state
// is cut to the shard on resume, so a run may resume with another rank count or stage.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/buffer.h"
#include "core/memory.h"
#include "dist/communicator.h"
#include "model/params.h"
#include "optim/optim_config.h"
#include "optim/optimizer.h"

namespace nanogpt {

// Sizes of the W shards of an arena of `numel` floats (multiples of 16, the last one shorter):
// what Zero1 cuts, and what the estimator sizes ZeRO-1's per-rank memory from.
std::vector<int64_t> zero1_shard_counts(int64_t numel, int world_size);

class Zero1 {
 public:
  Zero1(Communicator& comm, const OptimConfig& config, const ParamTable& table,
        MemoryTracker* tracker);

  // The optimizer over this rank's shard (its name and step count are the run's).
  Optimizer& optimizer() { return *optimizer_; }
  int64_t shard_begin() const { return begin_; }
  int64_t shard_end() const { return end_; }

  // grads: the whole arena, this rank's own micro-batch sum. Sums this rank's shard over ranks and
  // returns the global gradient norm (before clipping). Adds its waiting time to *comm_seconds.
  double reduce_gradients(const float* grads, double* comm_seconds);
  // Clips the shard's gradients by the norm from reduce_gradients (max_norm <= 0: no clipping),
  // updates the shard of `params` and all-gathers the whole arena.
  void step(float* params, double lr, double norm, double max_norm, double* comm_seconds);

  // Called by every rank together. Fills `whole` (name -> whole arena) on rank 0 with every state
  // tensor; other ranks' `whole` stays empty.
  void gather_state(std::vector<std::pair<std::string, Buffer<float>>>* whole);
  // Takes this rank's shard from a whole state tensor (table.total_numel() floats).
  void set_state_from_whole(const std::string& name, const float* whole);

 private:
  Communicator& comm_;
  int64_t numel_;
  std::vector<int64_t> counts_;  // (W) shard sizes, multiples of 16
  int64_t begin_ = 0, end_ = 0;
  std::unique_ptr<Optimizer> optimizer_;
  Buffer<float> shard_grads_;  // (end - begin)
};

}  // namespace nanogpt
