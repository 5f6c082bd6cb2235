// The peak a GPU run's MFU is measured against: the datasheet's dense tensor-core rate of the
// run's dtype for the GPUs whose rate we know (as nanoGPT's estimate_mfu takes the A100's 312
// TFLOP/s), else the rate of a large cuBLASLt matmul measured at start; the measured rate is
// reported beside the datasheet's either way.
#pragma once

#include <string>

#include "kernels/cuda/cuda_context.h"
#include "kernels/dtype.h"

namespace nanogpt {

struct GpuPeak {
  double flops_per_s = 0;
  double measured_flops_per_s = 0;  // a 4096^3 matmul in the run's dtype through cuBLASLt
  std::string description;          // for the compute: line
};

// Datasheet dense rates by device name (H100 / H200: 989 TFLOP/s bf16, 494 TF32; A100: 312 and
// 156), 0 when the name is not known.
double datasheet_peak_flops(const std::string& device_name, DType dtype);

GpuPeak gpu_mfu_peak(cuda::CudaContext& ctx, DType dtype);

}  // namespace nanogpt
