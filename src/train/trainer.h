// The training run: builds the model (scratch, resume, HF GPT-2 or llm.c weights), the loaders and
// the optimizer from a TrainConfig, then runs nanoGPT's loop (eval, checkpoint, gradient
// accumulation, clipping, scheduled LR, logging) and reports what happened.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>

#include "distributed/communicator.h"
#include "train/train_config.h"

namespace nanogpt {

class Backend;  // kernels/backend.h

struct TrainResult {
  int64_t iter_num = 0;   // iteration reached (== max_iters after a full run)
  int64_t steps_run = 0;  // optimizer steps taken in this process
  double wall_seconds = 0;
  double best_val_loss = 0;     // 1e9 if never evaluated
  double last_val_loss = -1;    // -1 if never evaluated
  double last_train_loss = -1;  // mean micro-batch loss of the last step
  double median_step_ms = 0;
  int64_t peak_tracked_bytes = 0;
  int64_t peak_rss_bytes = 0;
  std::string checkpoint_dir;  // "" if none was written
  double comm_wait_seconds = 0;  // total time steps waited on other ranks
  // Time to target (target_loss > 0): whether a full-validation loss reached it, and where.
  bool target_reached = false;
  int64_t target_iter = -1;
  // Why the run stopped before max_iters on request ("SIGTERM", "SIGINT", "SIGUSR1" or
  // "max_wall_minutes = M"), its checkpoint written; "" when it did not. The CLI then exits with
  // kStoppedExitCode (train/stop_request.h).
  std::string stopped_by;
};

struct TrainOptions {
  bool quiet = false;  // no log lines on stdout (metrics.jsonl is still written)
  // Keys the user set (config files, --key=value). On resume the model's shape comes from the
  // checkpoint; a shape key set here to a different value is an error rather than ignored.
  std::set<std::string> explicit_keys;
  // The ranks of a data-parallel run (mpirun); null: a single process.
  Communicator* comm = nullptr;
  // The backend to train on: the model, the optimizer state and the weight average live in its
  // memory and every op runs on it (kernels/backend.h). Null: the CPU (the run's own CpuBackend).
  // Off the host, checkpoints (ours and nanoGPT's ckpt.pt) go through host copies
  // (train/host_staging.h), several ranks need a communicator of device memory (NCCL), and ZeRO-1
  // keeps its shards in the backend's memory.
  Backend* device = nullptr;
  // With a device: the compute: line's description of it and the peak its MFU is taken against
  // (0: the CPU's measured peak, as on the CPU).
  std::string device_description;
  double device_peak_flops = 0;
};

// Runs training as configured. Throws nanogpt::Error on bad configuration or files.
TrainResult run_training(TrainConfig config, const TrainOptions& options = {});

// Where checkpoints live inside out_dir.
std::string checkpoint_dir_of(const std::string& out_dir);

}  // namespace nanogpt
