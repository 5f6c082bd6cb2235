// The one trainer (train/trainer.h) on one NVIDIA GPU, for `nanogpt train --device=cuda`: a
// CudaBackend holds the model, the optimizer state and the weight average and runs every op, and
// the run's MFU is taken against the GPU's peak (gpu_peak.h). Under a launcher each rank takes its
// own GPU and the gradients go over NCCL (gpu_world.h). What it cannot run on the GPU it finds is
// refused first, naming the key, the GPU and the fix (check_cuda_training_config).
// Built and tested on the CPU behind device-style memory; scripts/gpu_check.sh runs it on a GPU.
#pragma once

#include <string>

#include "kernels/cuda/cuda_context.h"
#include "train/train_config.h"
#include "train/trainer.h"

namespace nanogpt {

// The compute capability (major * 10 + minor) the CUDA kernels need: sm_75 (Turing: T4, RTX 20xx),
// the oldest CUDA 13 compiles for; the build's CMAKE_CUDA_ARCHITECTURES start there.
inline constexpr int kMinCudaComputeCapability = 75;
// bfloat16 needs sm_80 (A100, RTX 30xx and later): its tensor cores, cuBLASLt's bfloat16 products
// and the flash kernels' mma and cp.async (compiled for sm_80 on only). Older GPUs run float16
// (with the loss scaler) and float32.
inline constexpr int kMinBfloat16ComputeCapability = cuda::kAmpereComputeCapability;
// The largest head the GPU's 16-bit attention takes (kernels/cuda/attention_any_head.cu; heads of
// 64 run on the tensor cores' flash kernels).
inline constexpr int kMaxGpuHeadSize = 256;

// Throws nanogpt::Error naming the first key, or the GPU, that this build cannot train with on
// `gpu_name` of `compute_capability` (0: no GPU known yet; only the keys are checked), and what
// to use instead: a GPU older than sm_75, bfloat16 on one older than sm_80 (by its name), 16-bit
// attention heads of more than 256.
void check_cuda_training_config(const TrainConfig& config, const std::string& gpu_name,
                                int compute_capability);

// What dtype 'auto' means on a GPU of `compute_capability` (0: unknown): bfloat16, as nanoGPT's
// train.py where torch.cuda.is_bf16_supported(), else float16 (with the loss scaler).
std::string cuda_auto_dtype(int compute_capability);
// dtype 'auto' on --device=cuda resolved for the GPU this process finds; the log's note ("" when
// the dtype was given).
std::string resolve_cuda_auto_dtype(TrainConfig& config);

TrainResult run_training_on_cuda(TrainConfig config, TrainOptions options = {});

}  // namespace nanogpt
