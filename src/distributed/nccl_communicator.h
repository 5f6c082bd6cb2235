// NcclCommunicator: the Communicator over NCCL for device pointers: the gradients' overlapped
// all-reduce (start_all_reduce_sum) and the reduce-scatter take GPU memory of this rank's device
// only; every other operation takes GPU memory or host memory (the trainer's loss sums, flags and config checks),
// which is staged through a device buffer and copied back. Ranks meet through a rendezvous (rendezvous.h) that hands them rank 0's
// unique id; every wait polls the operation's CUDA event and ncclCommGetAsyncError up to the
// timeout, then aborts the communicator (ncclCommAbort) and throws nanogpt::Error naming this rank.
// CUDA and NCCL types stay in the .cpp (built only where CMake finds NCCL: NANOGPT_WITH_NCCL).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "distributed/communicator.h"

namespace nanogpt {

struct NcclOptions {
  int rank = 0;
  int world_size = 1;
  int local_world_size = 1;
  int device = 0;  // the CUDA device index of this rank (assign_gpu)
  double timeout_s = kDefaultCommTimeoutSeconds;
};

class NcclCommunicator final : public Communicator {
 public:
  // What rank 0 makes (ncclGetUniqueId, 128 bytes) and a rendezvous gives every other rank.
  static std::vector<uint8_t> make_unique_id();
  static size_t unique_id_bytes();  // its size (NCCL_UNIQUE_ID_BYTES, 128)
  // "2.28.9": the NCCL library loaded.
  static std::string library_version();

  // cudaSetDevice(options.device), then ncclCommInitRankConfig (non-blocking, so a peer that
  // never comes turns into an error after timeout_s).
  NcclCommunicator(const std::vector<uint8_t>& unique_id, const NcclOptions& options);
  ~NcclCommunicator() override;  // ncclCommDestroy (or nothing after an abort)
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  // The stream the caller's kernels produce gradients on (a cudaStream_t; nullptr: the legacy
  // default stream). Collectives wait for the work already enqueued there before they start.
  void set_compute_stream(void* cuda_stream);

  int rank() const override;
  int size() const override;
  int local_size() const override;
  void all_reduce_sum(float* data, int64_t n) override;
  void all_reduce_sum(double* data, int64_t n) override;
  void all_reduce_max(double* data, int64_t n) override;
  // On a second stream, so it overlaps the caller's compute; wait_all() returns the seconds the
  // host waited for it.
  void start_all_reduce_sum(float* data, int64_t n) override;
  void progress() override {}  // NCCL progresses by itself
  double wait_all() override;
  void reduce_scatter_sum(const float* in, float* out,
                          const std::vector<int64_t>& counts) override;
  void all_gather(float* data, const std::vector<int64_t>& counts) override;
  void all_gather(uint16_t* data, const std::vector<int64_t>& counts) override;
  void broadcast(void* data, int64_t bytes, int root) override;
  void barrier() override;  // an all-reduce of one float: NCCL has no barrier
  // ncclCommAbort; the caller exits, and the launcher (srun, torchrun) ends the other ranks.
  void abort_job(int exit_code) override;
  std::string describe() const override;
  bool device_buffers() const override { return true; }  // "NCCL 2.28.9, 2 ranks, 2 on this host"

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace nanogpt
