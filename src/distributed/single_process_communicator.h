// SingleProcessCommunicator: the world of one rank. Sums and gathers over one rank are the identity,
// so a run without mpirun goes through exactly the same trainer code with no MPI at all.
#pragma once

#include "distributed/communicator.h"

namespace nanogpt {

class SingleProcessCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int local_size() const override { return 1; }
  void all_reduce_sum(float*, int64_t) override {}
  void all_reduce_sum(double*, int64_t) override {}
  void all_reduce_max(double*, int64_t) override {}
  void start_all_reduce_sum(float*, int64_t) override {}
  void progress() override {}
  double wait_all() override { return 0; }
  void reduce_scatter_sum(const float* in, float* out,
                          const std::vector<int64_t>& counts) override;
  void all_gather(float*, const std::vector<int64_t>&) override {}
  void all_gather(uint16_t*, const std::vector<int64_t>&) override {}
  void broadcast(void*, int64_t, int) override {}
  void barrier() override {}
  void abort_job(int) override {}
  std::string describe() const override { return "single process"; }
};

}  // namespace nanogpt
