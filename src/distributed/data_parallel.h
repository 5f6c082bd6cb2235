// DataParallel: nanoGPT's DDP semantics for the trainer, over a Communicator.
//  - One global stream of micro-batches (the loader as a single process would read it); global
//    micro-batch g of a step goes to rank g % W, so W ranks x k micro-steps see exactly the
//    micro-batches of 1 rank x W*k micro-steps (random sampling: every rank draws the one stream and
//    skips its peers' draws; sequential: disjoint positions, interleaved).
//  - gradient_accumulation_steps is the global count, divided by the world size (error if it does
//    not divide); dropout masks follow the global micro-batch index.
//  - Gradients are summed once per optimizer step (each micro-batch's loss is scaled by 1/global
//    accumulation, so the sum is the mean), bucketed and overlapped with the last backward.
//  - Rank 0 alone logs, evaluates and writes; every rank resumes from the same checkpoint, whose
//    loader state is rank 0's, i.e. the global stream's position at a step boundary.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "data/loader.h"
#include "distributed/communicator.h"
#include "distributed/gradient_sync.h"
#include "model/gpt.h"

namespace nanogpt {

class DataParallel {
 public:
  // global_accumulation: gradient_accumulation_steps; throws if the world size does not divide it.
  // bucket_elems: floats per all-reduce bucket. all_reduce_gradients false: the gradients are
  // summed elsewhere (ZeRO-1's reduce-scatter) and finish_step sums only the loss.
  DataParallel(Communicator& comm, int64_t global_accumulation, int64_t bucket_elems,
               bool all_reduce_gradients = true);

  Communicator& comm() { return comm_; }
  int rank() const { return comm_.rank(); }
  int world_size() const { return comm_.size(); }
  bool is_main() const { return comm_.rank() == 0; }
  // Micro-steps this rank runs per optimizer step.
  int64_t local_accumulation() const { return local_accum_; }
  // Index within the step of this rank's micro-step `micro` in the global stream.
  int64_t global_micro(int64_t micro) const {
    return micro * comm_.size() + comm_.rank();
  }

  // After the loader was built or restored at a step boundary: moves it to this rank's first batch.
  void align(DataLoader& loader) const;
  // This rank's next micro-batch (and moves past its peers' ones).
  void next_batch(DataLoader& loader, int32_t* inputs, int32_t* targets) const;

  // Before each backward of a step: the last one (last = true) reports its finished gradient
  // ranges to the bucketed all-reduce.
  void before_backward(GPT& model, bool last);
  // After the step's last backward: completes the gradient sum (grads() then hold the sum over
  // ranks, every rank the same) and sums `loss_sum` (this rank's micro-batch losses) over ranks.
  // Returns the seconds this rank waited on communication.
  double finish_step(GPT& model, double* loss_sum);
  // Every rank's `value` (e.g. its peak memory), indexed by rank; a collective: every rank calls it.
  std::vector<int64_t> gather_per_rank(int64_t value);

 private:
  Communicator& comm_;
  int64_t local_accum_;
  int64_t bucket_elems_;
  bool all_reduce_gradients_;
  std::unique_ptr<GradientSync> sync_;
};

// Default floats per gradient bucket (PyTorch DDP's bucket_cap_mb = 25).
inline constexpr double kDefaultBucketMegabytes = 25;

// Threads for one rank: `configured` if > 0; else the cores this process may run on, shared among
// the ranks on this host unless the launcher already bound this rank to a subset of the cores.
int threads_per_rank(int64_t configured, int local_ranks);

// Every rank must run the same configuration (a flat JSON object of keys; `threads` may differ):
// rank 0's is broadcast and compared; throws on every rank when any rank's differs, naming the
// rank and, on that rank, the keys.
void check_same_config(Communicator& comm, const nlohmann::json& config);

}  // namespace nanogpt
