// run_training_on_cuda (gpu/cuda_training.h): the GPU's checks, backend and peak, then the one
// trainer.
#include "gpu/cuda_training.h"

#include <fmt/format.h>

#include <cstdlib>
#include <string>

#include "core/check.h"
#include "distributed/single_process_communicator.h"
#include "gpu/gpu_peak.h"
#include "gpu/gpu_world.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/cuda_context.h"
#include "kernels/dtype.h"
#include "kernels/gpu_flash_rule.h"

namespace nanogpt {

void check_cuda_training_config(const TrainConfig& c, const std::string& gpu_name,
                                int compute_capability) {
  const std::string gpu =
      fmt::format("{} (sm_{})", gpu_name.empty() ? "this GPU" : gpu_name, compute_capability);
  const bool known = compute_capability > 0;
  const bool new_enough = compute_capability >= kMinCudaComputeCapability;
  CHECK(!known || new_enough,
        "--device=cuda: {} is older than this build's CUDA kernels allow (they need sm_{} or "
        "later: T4, RTX 20xx and newer; CUDA 13 compiles for nothing older); train on the CPU "
        "with --device=cpu{}",
        gpu, kMinCudaComputeCapability,
        c.dtype == "float16" ? " (float16 runs there too, with the loss scaler)" : "");
  DType dtype = DType::kF32;
  parse_dtype(c.dtype == "auto" ? cuda_auto_dtype(compute_capability) : c.dtype, dtype);
  CHECK(!known || dtype != DType::kBF16 || compute_capability >= kMinBfloat16ComputeCapability,
        "--device=cuda: {} has no bfloat16 tensor cores (bfloat16 needs sm_{} or later: A100, "
        "RTX 30xx / 40xx, L4, H100 / H200); use --dtype=float16 (with the loss scaler, as nanoGPT "
        "on such GPUs) or --dtype=float32",
        gpu, kMinBfloat16ComputeCapability);
  CHECK(dtype == DType::kF32 || c.attention == "naive" || c.model.n_head <= 0 ||
            c.model.n_embd / c.model.n_head <= kMaxGpuHeadSize,
        "--device=cuda: {} attention on the GPU takes heads of at most 256 (here n_embd {} / "
        "n_head {} = {}); use more heads, or --dtype=float32 (whose attention keeps its T x T "
        "probabilities on the GPU)",
        dtype_name(dtype), c.model.n_embd, c.model.n_head,
        c.model.n_head > 0 ? c.model.n_embd / c.model.n_head : 0);
}

std::string cuda_auto_dtype(int compute_capability) {
  return compute_capability == 0 || compute_capability >= kMinBfloat16ComputeCapability
             ? "bfloat16"
             : "float16";
}

std::string resolve_cuda_auto_dtype(TrainConfig& config) {
  if (config.dtype != "auto") return "";
  const int cc = cuda::device_available() ? cuda::device_compute_capability() : 0;
  config.dtype = cuda_auto_dtype(cc);
  return cc == 0 || config.dtype == "bfloat16"
             ? "dtype auto -> bfloat16 (--device=cuda: the GPU's bfloat16 tensor cores)"
             : fmt::format("dtype auto -> float16 (--device=cuda: {} (sm_{}) has no bfloat16 "
                           "tensor cores; float16 with the loss scaler)",
                           cuda::device_name(), cc);
}

TrainResult run_training_on_cuda(TrainConfig config, TrainOptions options) {
  resolve_cuda_auto_dtype(config);  // (the CLI has resolved it already and logged why)
  // The keys first (a refusal needs no GPU), then the GPU found; no GPU: CudaBackend says why.
  const bool gpu_here = cuda::device_available();
  check_cuda_training_config(config, gpu_here ? cuda::device_name() : "",
                             gpu_here ? cuda::device_compute_capability() : 0);
  // (every GPU of a node is taken to be of one kind: the first one's name stands for them)
  DType dtype = DType::kF32;
  parse_dtype(config.dtype, dtype);
  if (dtype == DType::kF32 && config.attention == "flash" &&
      !gpu_flash_attention_supported(dtype, config.model.n_embd, config.model.n_head)) {
    // The same attention by another way (kernel choices pick how, never what).
    config.attention = "naive";
    if (!options.quiet && (options.comm == nullptr || options.comm->rank() == 0)) {
      fmt::print(
          "--device=cuda: float32 attention keeps its T x T probabilities "
          "(attention = 'naive'; the GPU's flash kernels are bfloat16)\n");
    }
  }
  // NANOGPT_GPU_GELU_EPILOGUE=0: the bfloat16 MLP's GELU in its own kernels (an A/B switch).
  const char* epilogue = std::getenv("NANOGPT_GPU_GELU_EPILOGUE");
  // Several ranks (mpirun, srun, torchrun): this rank's GPU and the NCCL communicator.
  SingleProcessCommunicator alone;
  GpuWorld world = make_gpu_world(options.comm ? *options.comm : alone, config);
  if (world.nccl) {
    fmt::print("{}\n", world.description);  // every rank: which GPU it holds
    std::fflush(stdout);
    options.comm = world.nccl.get();
  }
  CudaBackend gpu(/*allow_tf32=*/true, !(epilogue && std::string(epilogue) == "0"), world.device);
  const GpuPeak peak = gpu_mfu_peak(gpu.context(), dtype);
  options.device = &gpu;
  options.device_description =
      fmt::format("{}, {}", cuda::device_description(world.device), peak.description);
  options.device_peak_flops = peak.flops_per_s;
  return run_training(std::move(config), options);
}

}  // namespace nanogpt
