// The training estimator: before anything runs, what a TrainConfig will cost per iteration --
// parameters, FLOPs (nanoGPT's formula and an exact matmul count) and peak memory broken down by
// what holds it. Memory comes from the functions the trainer allocates through (ParamTable,
// optimizer_state_tensor_count, activation_layout, grad_scratch_layout), so it cannot drift from
// the trainer's tracked peak.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "train/train_config.h"

namespace nanogpt {

struct MemoryLine {
  std::string what;
  int64_t bytes = 0;
};

struct TrainingEstimate {
  ModelConfig model;              // with vocab_size resolved
  int64_t batch_size = 0;         // micro-batch B
  int64_t accumulation = 1;       // micro-batches per optimizer step
  int64_t tokens_per_iter = 0;    // B * T * accumulation
  std::string dtype = "float32";  // what the trainer will run in
  std::string optimizer;
  std::string attention = "flash";  // the `attention` key: flash or naive
  bool fused = true;                // the `fused` key
  bool checkpointing = false;       // the `activation_checkpointing` key
  int recompute = 2;                // the `recompute` key
  // Data-parallel training (`mpirun -np world_size`): memory and accumulation are per rank (each
  // rank runs micro-batches of batch_size, gradient_accumulation_steps / world_size of them);
  // zero_stage 1 shards the optimizer state (the largest shard, rank 0's, is shown).
  int world_size = 1;
  int zero_stage = 0;
  int64_t local_accumulation = 1;
  int64_t params = 0;          // all parameters (wte counted once, tied head)
  int64_t params_for_mfu = 0;  // without wpe (nanoGPT's get_num_params)
  // FLOPs of one optimizer step (forward + backward of every micro-batch): nanoGPT's estimate
  // (6N + 12 L H Q T per token, full attention) and the exact matmul count of our model (causal
  // attention's T(T+1)/2 pairs, classifier over the padded vocabulary; elementwise work excluded).
  double flops_per_iter_nanogpt = 0;
  double flops_per_iter_exact = 0;
  // The optimizer's own matmuls per iteration (Muon's Newton-Schulz, shared among the ranks).
  double flops_per_iter_optimizer = 0;
  std::vector<MemoryLine> memory;  // weights, grads, optimizer state, activations by kind, ...
  int64_t peak_bytes = 0;          // sum of memory: all of it is live during backward
};

// Resolves what the trainer resolves before allocating: vocab_size from the dataset's meta.json
// (GPT-2's 50257 if there is none) and, for init_from=resume, the checkpoint's model shape.
// Throws nanogpt::Error for init_from set to a weights file (not supported by the estimator).
TrainConfig resolve_for_estimate(TrainConfig config);

// The estimate for a validated, resolved config, per rank of `world_size` data-parallel ranks.
// Throws nanogpt::Error if world_size does not divide gradient_accumulation_steps (as the trainer).
TrainingEstimate estimate_training(const TrainConfig& config, int world_size = 1);

// Exact matmul FLOPs of one training micro-batch of B sequences of length T (forward + backward).
double exact_training_flops(const ModelConfig& model, int64_t B, int64_t T);

// The human-readable table printed by `nanogpt estimate`. peak_flops > 0 adds the predicted time
// per iteration at that machine peak, whose arithmetic peak_name names ("fp32 FMA", "bf16 dot
// products": the one the run's MFU is taken against, train/metrics.h mfu_peak_for).
std::string format_estimate(const TrainingEstimate& estimate, double peak_flops,
                            const std::string& peak_name = "fp32 FMA");

}  // namespace nanogpt
