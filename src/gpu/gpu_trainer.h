// The training run on one NVIDIA GPU (--device=cuda): nanoGPT's loop (scheduled learning rate,
// gradient accumulation, clipping, AdamW, evaluation, checkpoints, resume, stop on a signal) over
// the GPU model (gpu_model.h). Checkpoints are the CPU's files: a run moves between the CPU and
// the GPU by resuming. What it does not run yet is refused by name (check_gpu_training_config).
#pragma once

#include "train/train_config.h"
#include "train/trainer.h"

namespace nanogpt {

// Throws nanogpt::Error naming the first key the GPU trainer does not run yet (optimizer other than
// AdamW, float16, data parallelism, ...) and what to use instead.
void check_gpu_training_config(const TrainConfig& config);

TrainResult run_training_gpu(TrainConfig config, const TrainOptions& options = {});

}  // namespace nanogpt
