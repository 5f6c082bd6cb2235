// MpiCommunicator: the Communicator over MPI_COMM_WORLD (OpenMPI). Every wait is a polling loop
// with a deadline, so a dead peer or a cut network turns into a nanogpt::Error naming this rank
// within `timeout_s` instead of a hang; MPI errors are returned (not fatal) and turned into errors
// naming the rank and the operation.
#pragma once

#include <mpi.h>

#include <vector>

#include "distributed/communicator.h"

namespace nanogpt {

class MpiCommunicator final : public Communicator {
 public:
  // Initializes MPI (MPI_THREAD_FUNNELED: only the main thread calls MPI).
  explicit MpiCommunicator(double timeout_s);
  ~MpiCommunicator() override;  // MPI_Finalize, unless the job was aborted
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_size() const override { return local_size_; }
  void all_reduce_sum(float* data, int64_t n) override;
  void all_reduce_sum(double* data, int64_t n) override;
  void all_reduce_max(double* data, int64_t n) override;
  void start_all_reduce_sum(float* data, int64_t n) override;
  void progress() override;
  double wait_all() override;
  void reduce_scatter_sum(const float* in, float* out,
                          const std::vector<int64_t>& counts) override;
  void all_gather(float* data, const std::vector<int64_t>& counts) override;
  void all_gather(uint16_t* data, const std::vector<int64_t>& counts) override;
  void broadcast(void* data, int64_t bytes, int root) override;
  void barrier() override;
  void abort_job(int exit_code) override;
  std::string describe() const override;

 private:
  // Throws nanogpt::Error naming the rank and `what` when rc is not MPI_SUCCESS.
  void check(int rc, const char* what) const;
  // Polls until every request is complete or the deadline passes (then throws).
  void wait(std::vector<MPI_Request>& requests, const char* what);
  void all_reduce(void* data, int64_t n, MPI_Datatype type, MPI_Op op, const char* what);
  void all_gather(void* data, const std::vector<int64_t>& counts, MPI_Datatype type);

  int rank_ = 0, size_ = 1, local_size_ = 1;
  double timeout_s_;
  bool aborted_ = false;
  std::vector<MPI_Request> pending_;  // started by start_all_reduce_sum
};

}  // namespace nanogpt
