// The training run on one NVIDIA GPU (--device=cuda): nanoGPT's loop (scheduled learning rate,
// gradient accumulation, clipping, AdamW, evaluation, checkpoints, resume, stop on a signal) over
// the GPU model (gpu_model.h). Checkpoints are the CPU's files: a run moves between the CPU and
// the GPU by resuming. What it does not run yet is refused by name (check_gpu_training_config).
#pragma once

#include <string>

#include "train/train_config.h"
#include "train/trainer.h"

namespace nanogpt {

// Throws nanogpt::Error naming the first key no trainer runs on the GPU yet (float16: no kernel;
// ZeRO-1) and what to use instead.
void check_gpu_training_config(const TrainConfig& config);
// The first key this loop does not run ("" when it runs them all: AdamW, no time to target, one
// learning rate, no QK-norm gain, U-net skips, attention gain, sequence-length warmup or weight average). The
// CLI sends a run with such a key to the one trainer on the GPU (gpu/cuda_training.h).
std::string gpu_loop_gap(const TrainConfig& config);

TrainResult run_training_gpu(TrainConfig config, const TrainOptions& options = {});

}  // namespace nanogpt
