// Zero1: ZeRO stage 1 for data-parallel AdamW/SGD/Muon (Muon's orthogonalizations need whole
// matrices, which a shard may cut: see optim/muon.h for how it shares them). The parameter arena
// is cut into one contiguous shard per rank; each rank keeps the optimizer state of its shard only (1/N of it). A step:
// reduce-scatter the gradients (each rank gets the sum of its shard), global gradient norm from the
// shards' sums of squares (clipping as clip_grad_norm; a float16 inf/nan anywhere makes it
// non-finite on every rank alike), update the own shard, all-gather the weights.
//  - float32: the model's whole float32 arena is the master; the own shard of it is updated and
//    the float32 arena all-gathered.
//  - bfloat16 / float16 (shards_masters): the float32 master weights are sharded too. The model is
//    built with MasterWeights::kOutside and holds no float32 arena; this rank holds the masters of
//    its shard, updates them, rounds them into its range of the model's 16-bit copy and copies
//    their float32-read part (embeddings, LayerNorms, biases: ParamSpec::lowp_only false, which
//    the kernels read in float32) into the model's compact float32 copies; then both are
//    all-gathered -- the 16-bit copy is half the bytes of a float32 all-gather, and the float32
//    pieces the forward reads stay whole and identical on every rank.
// Checkpoints stay whole: the state (and the sharded masters) are gathered to rank 0 to save; on
// resume each rank reads only its shard from the files (load_checkpoint's ranges), so a run may
// resume with another rank count, stage or dtype without any rank holding the whole state.
// Every buffer lives in the optimizer's backend's memory (runtime.backend: a GPU's, with NCCL
// between the ranks) and every pass over it is a backend op; the host sees a shard only as a copy
// (init, weights file, checkpoint).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/buffer.h"
#include "core/memory.h"
#include "distributed/communicator.h"
#include "kernels/backend.h"
#include "model/gpt.h"
#include "model/params.h"
#include "optim/optim_config.h"
#include "optim/optimizer.h"

namespace nanogpt {

// Sizes of the W shards of an arena of `numel` floats (multiples of 16, the last one shorter):
// what Zero1 cuts, and what the estimator sizes ZeRO-1's per-rank memory from.
std::vector<int64_t> zero1_shard_counts(int64_t numel, int world_size);

class Zero1 {
 public:
  // shard_masters: mixed precision, the model built with MasterWeights::kOutside; this rank then
  // holds the float32 master weights of its shard (charged to tracker).
  // runtime: what the optimizer takes from the run (its backend, which also holds Zero1's shard
  // buffers; Muon's matmul dtype); Zero1 fills in the shard and the rank sharing.
  Zero1(Communicator& comm, const OptimConfig& config, const ParamTable& table,
        MemoryTracker* tracker, bool shard_masters = false, OptimizerRuntime runtime = {});

  // The optimizer over this rank's shard (its name and step count are the run's).
  Optimizer& optimizer() { return *optimizer_; }
  int64_t shard_begin() const { return begin_; }
  int64_t shard_end() const { return end_; }

  bool shards_masters() const { return !master_.empty(); }
  // shards_masters(): this rank's float32 master weights, arena elements [shard_begin, shard_end),
  // in the backend's memory. Fill them (init, weights file, checkpoint), then publish_weights.
  float* master_shard() { return master_.data(); }
  // shards_masters(): the shard of nanoGPT's init from `seed` (what GPT::init_weights gives).
  void init_masters(const ParamTable& table, uint64_t seed);
  // shards_masters(): the shard of a whole host arena of master weights (table.total_numel()
  // floats).
  void set_masters_from_whole(const float* whole);
  // shards_masters(): sets the model's weights from every rank's master shard (each rank its range
  // of the 16-bit copy and float32 copies, then all-gathers). Every rank calls it together.
  void publish_weights(GPT& model, Backend& ops, double* comm_seconds = nullptr);

  // grads: the whole arena, this rank's own micro-batch sum. Sums this rank's shard over ranks and
  // returns the global gradient norm (before clipping). Adds its waiting time to *comm_seconds.
  double reduce_gradients(const float* grads, double* comm_seconds);
  // Clips the shard's gradients by the norm from reduce_gradients (max_norm <= 0: no clipping),
  // updates the shard of `params` and all-gathers the whole arena.
  void step(float* params, double lr, double norm, double max_norm, double* comm_seconds);
  // The step of the trainer's model: the float32 step above on model.params(), or, with sharded
  // masters, the update of master_shard() and publish_weights.
  void step(GPT& model, Backend& ops, double lr, double norm, double max_norm,
            double* comm_seconds);

  // Called by every rank together. Fills `whole` (name -> whole arena) on rank 0 with every state
  // tensor; other ranks' `whole` stays empty.
  void gather_state(std::vector<std::pair<std::string, Buffer<float>>>* whole);
  // shards_masters(): called by every rank together; fills *whole (table.total_numel() floats,
  // untracked like the gathered state) with the master weights on rank 0, leaves it empty on the
  // others.
  void gather_masters(Buffer<float>* whole);

 private:
  Communicator& comm_;
  int64_t numel_;
  std::vector<int64_t> counts_;  // (W) shard sizes, multiples of 16
  int64_t begin_ = 0, end_ = 0;
  // Scales the shard's summed gradients by clip_grad_norm's factor for `norm`.
  void clip_shard(double norm, double max_norm);
  // Sends every rank's `shard` (counts_[rank] floats, backend memory) to rank 0, which writes the
  // whole arena into the host's `whole` (null on the other ranks).
  void gather_to_root(const float* shard, float* whole);

  std::vector<int64_t> fp32_counts_;  // (W) float32-read floats in each shard (shards_masters)
  std::unique_ptr<Optimizer> optimizer_;
  // The backend the optimizer computes through; the buffers below are in its memory.
  Backend& ops() const { return optimizer_->backend(); }
  Buffer<float> shard_grads_;  // (end - begin)
  Buffer<float> master_;       // (end - begin) float32 master weights; empty unless sharded
};

}  // namespace nanogpt
