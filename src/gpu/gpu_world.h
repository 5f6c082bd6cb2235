// GpuWorld: the ranks of `train --device=cuda` on several GPUs. Under a launcher (mpirun, srun,
// torchrun: distributed/launch_env.h) each process takes its GPU by its node-local rank
// (CUDA_VISIBLE_DEVICES applied), rank 0 makes NCCL's unique id, and the ranks get it through
// MPI when mpirun started them (as llm.c does), else through the `rendezvous` key's TCP address
// or shared directory (distributed/rendezvous.h); then the NCCL communicator carries the
// gradients (distributed/nccl_communicator.h). One process and no launcher: one GPU, device 0.
#pragma once

#include <memory>
#include <string>

#include "distributed/communicator.h"
#include "train/train_config.h"

namespace nanogpt {

struct GpuWorld {
  std::unique_ptr<Communicator> nccl;  // null: a world of one
  int device = 0;                      // the index among the visible GPUs this rank computes on
  std::string description;             // the log's line: rank, launcher, GPU (every rank's own)
};

// host: the host communicator the CLI made (MPI under mpirun, else a world of one). Throws
// nanogpt::Error naming what is wrong: a build without NCCL, more local ranks than GPUs (unless
// NANOGPT_SHARE_GPU=1: tests of several ranks on one GPU), a rendezvous that fails.
GpuWorld make_gpu_world(Communicator& host, const TrainConfig& config);

}  // namespace nanogpt
