// mpi_off_host_trainer: `nanogpt train`'s keys, run by the one trainer on an OffHostCpuBackend
// (the CPU's kernels behind memory the trainer must treat as a device's) with the MPI communicator
// presented as one of device memory, as NCCL is. Under mpirun it runs the trainer's data-parallel
// path for a GPU (gradients bucketed and all-reduced in the backend's memory, the host's scalars
// through the same communicator) on the CPU, for tests/mpi/device_data_parallel_test.cpp.
#include <fmt/format.h>

#include <exception>
#include <string>
#include <vector>

#include "backends/off_host_cpu_backend.h"
#include "core/config.h"
#include "core/config_parse.h"
#include "distributed/communicator.h"
#include "train/train_config.h"
#include "train/trainer.h"

namespace nanogpt {
namespace {

// Every operation forwarded to `inner`; device_buffers() says true (NCCL's answer).
class AsDeviceCommunicator final : public Communicator {
 public:
  explicit AsDeviceCommunicator(Communicator& inner) : c_(inner) {}
  int rank() const override { return c_.rank(); }
  int size() const override { return c_.size(); }
  int local_size() const override { return c_.local_size(); }
  void all_reduce_sum(float* d, int64_t n) override { c_.all_reduce_sum(d, n); }
  void all_reduce_sum(double* d, int64_t n) override { c_.all_reduce_sum(d, n); }
  void all_reduce_max(double* d, int64_t n) override { c_.all_reduce_max(d, n); }
  void start_all_reduce_sum(float* d, int64_t n) override { c_.start_all_reduce_sum(d, n); }
  void progress() override { c_.progress(); }
  double wait_all() override { return c_.wait_all(); }
  void reduce_scatter_sum(const float* in, float* out,
                          const std::vector<int64_t>& counts) override {
    c_.reduce_scatter_sum(in, out, counts);
  }
  void all_gather(float* d, const std::vector<int64_t>& counts) override {
    c_.all_gather(d, counts);
  }
  void all_gather(uint16_t* d, const std::vector<int64_t>& counts) override {
    c_.all_gather(d, counts);
  }
  void broadcast(void* d, int64_t bytes, int root) override { c_.broadcast(d, bytes, root); }
  void barrier() override { c_.barrier(); }
  void abort_job(int code) override { c_.abort_job(code); }
  std::string describe() const override { return c_.describe() + ", as device memory"; }
  bool device_buffers() const override { return true; }

 private:
  Communicator& c_;
};

}  // namespace
}  // namespace nanogpt

int main(int argc, char** argv) {
  using namespace nanogpt;
  try {
    TrainConfig config;
    apply_assignments(config, parse_command_line(std::vector<std::string>(argv + 1, argv + argc)));
    config.validate();
    config.resolve_auto_dtype();
    auto mpi = make_communicator(config.comm_timeout);
    AsDeviceCommunicator comm(*mpi);
    testing::OffHostCpuBackend device;
    TrainOptions options;
    options.comm = &comm;
    options.device = &device;
    options.device_description = "the CPU's kernels behind device-style memory";
    options.device_peak_flops = 1e12;  // (the device's line of the log; MFU against 1 TFLOP/s)
    run_training(config, options);
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
