// run_training_on_cuda (gpu/cuda_training.h): the GPU's backend and peak, then the one trainer.
#include "gpu/cuda_training.h"

#include <fmt/format.h>

#include "core/check.h"
#include "gpu/gpu_peak.h"
#include "gpu/gpu_trainer.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/dtype.h"

namespace nanogpt {

TrainResult run_training_on_cuda(TrainConfig config, TrainOptions options) {
  check_gpu_training_config(config);
  if (config.dtype == "auto") config.dtype = "bfloat16";  // as the GPU's own loop resolves it
  CHECK(options.comm == nullptr || options.comm->size() == 1,
        "--device=cuda trains on one GPU in one process; data parallelism over several GPUs is "
        "not built yet (run without mpirun)");
  DType dtype = DType::kF32;
  parse_dtype(config.dtype, dtype);
  CudaBackend gpu;  // throws naming why when no GPU is usable
  const GpuPeak peak = gpu_mfu_peak(gpu.context(), dtype);
  options.device = &gpu;
  options.device_description = fmt::format("{}, {}", cuda::device_description(), peak.description);
  options.device_peak_flops = peak.flops_per_s;
  return run_training(std::move(config), options);
}

}  // namespace nanogpt
