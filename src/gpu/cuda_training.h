// The one trainer (train/trainer.h) on one NVIDIA GPU: a CudaBackend holds the model, the optimizer
// state and the weight average and runs every op, and the run's MFU is taken against the GPU's
// peak (gpu_peak.h). The CLI sends here the --device=cuda runs with a key the GPU's own loop
// (gpu_trainer.h) does not run: Muon, SGD, time to a target, own learning rates, QK-norm's query
// gain, U-net skips, the attention gain, the sequence-length warmup, the weight average. Built and
// tested on the CPU behind device-style memory; not yet run on a GPU.
#pragma once

#include "train/train_config.h"
#include "train/trainer.h"

namespace nanogpt {

TrainResult run_training_on_cuda(TrainConfig config, TrainOptions options = {});

}  // namespace nanogpt
