// Communicator: the one interface data-parallel training talks to other ranks through (all-reduce,
// reduce-scatter, all-gather, broadcast, barrier). Implementations: SingleProcessCommunicator
// (world of one: every operation is the identity), MpiCommunicator (OpenMPI, host buffers) and
// NcclCommunicator (NCCL, device buffers; nccl_communicator.h, ranks met through rendezvous.h and
// launch_env.h); the trainer never calls MPI or NCCL itself. make_communicator() picks MPI exactly when the process was started by an MPI
// launcher (mpirun sets OMPI_COMM_WORLD_SIZE), so a plain `nanogpt train` never initializes MPI.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace nanogpt {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Ranks of this world on this host (threads per rank are derived from it).
  virtual int local_size() const = 0;

  // In-place sum over ranks: every rank ends with the sum. Blocking.
  virtual void all_reduce_sum(float* data, int64_t n) = 0;
  virtual void all_reduce_sum(double* data, int64_t n) = 0;
  // In-place maximum over ranks. Blocking.
  virtual void all_reduce_max(double* data, int64_t n) = 0;

  // Starts an in-place sum of `data` (n floats) and returns at once; the memory must not be touched
  // until wait_all(). Operations complete in the order started (every rank starts the same ones).
  virtual void start_all_reduce_sum(float* data, int64_t n) = 0;
  // Lets started operations advance (MPI progresses non-blocking collectives inside its calls).
  virtual void progress() = 0;
  // Waits for every started operation; returns the seconds spent waiting.
  virtual double wait_all() = 0;

  // in: the concatenation of size() blocks, block r of counts[r] floats. Every rank sums the blocks
  // over ranks and keeps its own: out (counts[rank()] floats) = sum over ranks of block rank().
  virtual void reduce_scatter_sum(const float* in, float* out,
                                  const std::vector<int64_t>& counts) = 0;
  // data: size() blocks as above; each rank's own block is sent to every rank, in place.
  virtual void all_gather(float* data, const std::vector<int64_t>& counts) = 0;
  // The same for 16-bit values (bfloat16 / float16 weights: half the bytes of float32).
  virtual void all_gather(uint16_t* data, const std::vector<int64_t>& counts) = 0;
  // `bytes` bytes from `root` to every rank.
  virtual void broadcast(void* data, int64_t bytes, int root) = 0;
  virtual void barrier() = 0;

  // Ends every rank of the job at once after a fatal error on this one (MPI_Abort); a world of one
  // just returns (the caller exits).
  virtual void abort_job(int exit_code) = 0;
  // "MPI (OpenMPI 4.1.4), 2 ranks" / "single process".
  virtual std::string describe() const = 0;
  // Whether start_all_reduce_sum takes device memory (a GPU's gradients: NCCL); the other
  // operations then take device or host memory (host buffers are staged through the device).
  virtual bool device_buffers() const { return false; }
};

// Seconds a rank waits for its peers in one operation before it declares the job broken.
inline constexpr double kDefaultCommTimeoutSeconds = 600;

// MPI when launched by mpirun (OMPI_COMM_WORLD_SIZE is set), else a world of one. `timeout_s`
// bounds every wait; on expiry the operation throws nanogpt::Error naming this rank and the peers.
std::unique_ptr<Communicator> make_communicator(double timeout_s = kDefaultCommTimeoutSeconds);

// True when this process was started by an MPI launcher.
bool launched_by_mpi();

}  // namespace nanogpt
