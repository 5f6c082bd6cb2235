// gpu_mfu_peak (gpu_peak.h): the datasheet table and the matmul that measures the GPU's rate.
#include "gpu/gpu_peak.h"

#include <fmt/format.h>

#include <vector>

#include "core/rng.h"
#include "core/timer.h"
#include "kernels/cuda/device_memory.h"
#include "kernels/cuda/ops_cuda.h"

namespace nanogpt {

double datasheet_peak_flops(const std::string& name, DType dtype) {
  const bool tf32 = dtype == DType::kF32;
  // SXM parts; the H100 PCIe (756 / 378) and NVL are named apart.
  if (name.find("H100 PCIe") != std::string::npos) return tf32 ? 378e12 : 756e12;
  if (name.find("H100") != std::string::npos || name.find("H200") != std::string::npos ||
      name.find("H800") != std::string::npos) {
    return tf32 ? 494.7e12 : 989.4e12;
  }
  if (name.find("A100") != std::string::npos || name.find("A800") != std::string::npos) {
    return tf32 ? 156e12 : 312e12;
  }
  return 0;
}

GpuPeak gpu_mfu_peak(cuda::CudaContext& ctx, DType dtype) {
  const int n = 4096;
  const int64_t nn = int64_t{n} * n;
  std::vector<float> host(static_cast<size_t>(nn));
  Rng rng(42);
  for (float& x : host) x = rng.uniform() - 0.5f;
  cuda::DeviceBuffer<float> a32(nn, "the peak probe"), b32(nn, "the peak probe");
  cuda::DeviceBuffer<float> c32(nn, "the peak probe");
  a32.upload(host);
  b32.upload(host);
  cuda::DeviceBuffer<uint16_t> a16, b16, c16;
  TypedPtr a(a32.data()), b(b32.data()), c(c32.data());
  if (dtype != DType::kF32) {
    a16 = cuda::DeviceBuffer<uint16_t>(nn, "the peak probe");
    b16 = cuda::DeviceBuffer<uint16_t>(nn, "the peak probe");
    c16 = cuda::DeviceBuffer<uint16_t>(nn, "the peak probe");
    cuda::convert(TypedPtr(a16.data(), dtype), ConstTypedPtr(a32.data()), nn);
    cuda::convert(TypedPtr(b16.data(), dtype), ConstTypedPtr(b32.data()), nn);
    a = TypedPtr(a16.data(), dtype);
    b = TypedPtr(b16.data(), dtype);
    c = TypedPtr(c16.data(), dtype);
  }
  for (int i = 0; i < 3; ++i) cuda::matmul_forward(ctx, c, a, b, {}, n, n, n);
  ctx.synchronize("the GPU peak probe");
  const int reps = 20;
  Timer t;
  for (int i = 0; i < reps; ++i) cuda::matmul_forward(ctx, c, a, b, {}, n, n, n);
  ctx.synchronize("the GPU peak probe");
  GpuPeak p;
  p.measured_flops_per_s = 2.0 * n * double(n) * n * reps / t.seconds();
  const std::string name = cuda::device_name();
  const double sheet = datasheet_peak_flops(name, dtype);
  const char* unit = dtype == DType::kF32 ? "TF32" : dtype_name(dtype);
  if (sheet > 0) {
    p.flops_per_s = sheet;
    p.description = fmt::format(
        "MFU is relative to the {} dense {} peak {:.0f} TFLOP/s (datasheet); a 4096^3 {} matmul "
        "ran at {:.0f} TFLOP/s here",
        name, unit, sheet / 1e12, unit, p.measured_flops_per_s / 1e12);
  } else {
    p.flops_per_s = p.measured_flops_per_s;
    p.description = fmt::format(
        "MFU is relative to the measured {} matmul rate {:.0f} TFLOP/s (a 4096^3 product; no "
        "datasheet rate is known for {})",
        unit, p.measured_flops_per_s / 1e12, name);
  }
  return p;
}

}  // namespace nanogpt
