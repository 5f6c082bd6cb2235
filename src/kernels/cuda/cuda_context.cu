// CudaContext (cuda_context.h) and device memory (device_memory.h): device selection, the cuBLAS /
// cuBLASLt handles and workspace, the scratch arena, and the allocation and copy helpers.
#include <fmt/format.h>

#include "kernels/cuda/cuda_context.h"
#include "kernels/cuda/cuda_util.cuh"
#include "kernels/cuda/device_memory.h"

namespace nanogpt::cuda {

bool device_available(std::string* why) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    if (why) *why = fmt::format("cudaGetDeviceCount: {}", cudaGetErrorString(err));
    cudaGetLastError();  // clear the sticky error of a failed runtime start
    return false;
  }
  if (count == 0) {
    if (why) *why = "the CUDA driver reports no device";
    return false;
  }
  return true;
}

int visible_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

std::string device_name(int device) {
  if (!device_available() || device >= visible_device_count()) return "";
  cudaDeviceProp p{};
  NANOGPT_CUDA_CHECK(cudaGetDeviceProperties(&p, device));
  return p.name;
}

int device_compute_capability(int device) {
  if (!device_available() || device >= visible_device_count()) return 0;
  cudaDeviceProp p{};
  NANOGPT_CUDA_CHECK(cudaGetDeviceProperties(&p, device));
  return p.major * 10 + p.minor;
}

std::string device_description(int device) {
  std::string why;
  if (!device_available(&why)) return "no CUDA device (" + why + ")";
  cudaDeviceProp p{};
  NANOGPT_CUDA_CHECK(cudaGetDeviceProperties(&p, device));
  int driver = 0;
  cudaDriverGetVersion(&driver);
  return fmt::format("{}, {} SMs, {:.1f} GiB, compute capability {}.{}, driver CUDA {}.{}", p.name,
                     p.multiProcessorCount, p.totalGlobalMem / double(1 << 30), p.major, p.minor,
                     driver / 1000, (driver % 1000) / 10);
}

CudaContext::CudaContext(bool allow_tf32, int device) : allow_tf32_(allow_tf32), device_(device) {
  std::string why;
  CHECK(device_available(&why),
        "--device=cuda: no usable CUDA device ({}); train on the CPU with --device=cpu", why);
  CHECK(device >= 0 && device < visible_device_count(),
        "--device=cuda: GPU {} asked for, but this process sees {} (CUDA_VISIBLE_DEVICES)", device,
        visible_device_count());
  NANOGPT_CUDA_CHECK(cudaSetDevice(device));
  // TF32 is Ampere's (sm_80): a Turing GPU (sm_75) multiplies float32 in float32.
  allow_tf32_ = allow_tf32 && device_compute_capability(device) >= kAmpereComputeCapability;
  cublasHandle_t h = nullptr;
  NANOGPT_CUBLAS_CHECK(cublasCreate(&h));
  cublas_ = h;
  NANOGPT_CUBLAS_CHECK(
      cublasSetMathMode(h, allow_tf32_ ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
  cublasLtHandle_t lt = nullptr;
  NANOGPT_CUBLAS_CHECK(cublasLtCreate(&lt));
  cublaslt_ = lt;
  lt_workspace_bytes_ = size_t{32} << 20;  // cuBLASLt's recommendation for Hopper
  lt_workspace_ = device_alloc(lt_workspace_bytes_, "cuBLASLt's workspace");
  NANOGPT_CUBLAS_CHECK(cublasSetWorkspace(h, lt_workspace_, lt_workspace_bytes_));
}

CudaContext::~CudaContext() {
  cudaDeviceSynchronize();
  if (cublas_) cublasDestroy(static_cast<cublasHandle_t>(cublas_));
  if (cublaslt_) cublasLtDestroy(static_cast<cublasLtHandle_t>(cublaslt_));
  device_free(lt_workspace_);
  device_free(scratch_);
}

void* CudaContext::scratch(size_t bytes) {
  if (bytes > scratch_bytes_) {
    // The old area may still be read by queued work: free it only after the device is done.
    NANOGPT_CUDA_CHECK(cudaDeviceSynchronize());
    device_free(scratch_);
    scratch_ = nullptr;
    scratch_bytes_ = 0;
    const size_t grown = bytes + bytes / 4;
    scratch_ = device_alloc(grown, "the GPU ops' scratch area");
    scratch_bytes_ = grown;
  }
  return scratch_;
}

void CudaContext::synchronize(const char* what) {
  cudaError_t err = cudaDeviceSynchronize();
  if (err != cudaSuccess) fail("CUDA error while running {}: {}", what, cudaGetErrorString(err));
  err = cudaGetLastError();
  if (err != cudaSuccess) fail("CUDA error while running {}: {}", what, cudaGetErrorString(err));
}

void* device_alloc(size_t bytes, const char* what) {
  if (bytes == 0) return nullptr;
  void* p = nullptr;
  cudaError_t err = cudaMalloc(&p, bytes);
  if (err != cudaSuccess) {
    cudaGetLastError();
    size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    fail("out of GPU memory: {} needs {:.1f} MiB, the GPU has {:.1f} MiB free of {:.1f} MiB ({}); "
         "`nanogpt estimate --device=cuda <config>` shows what each part takes; lower batch_size "
         "(raising gradient_accumulation_steps keeps the tokens a step) or block_size",
         what, bytes / 1048576.0, free_b / 1048576.0, total_b / 1048576.0,
         cudaGetErrorString(err));
  }
  return p;
}

void device_free(void* p) {
  if (p) cudaFree(p);
}

void copy_to_device(void* dst, const void* src, size_t bytes) {
  if (bytes) NANOGPT_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
}
void copy_to_host(void* dst, const void* src, size_t bytes) {
  if (bytes) NANOGPT_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
}
void copy_device(void* dst, const void* src, size_t bytes) {
  if (bytes) NANOGPT_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, 0));
}
void fill_zero_device(void* p, size_t bytes) {
  if (bytes) NANOGPT_CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, 0));
}
size_t device_memory_used() {
  size_t free_b = 0, total_b = 0;
  NANOGPT_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  return total_b - free_b;
}
size_t device_memory_total() {
  size_t free_b = 0, total_b = 0;
  NANOGPT_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  return total_b;
}

}  // namespace nanogpt::cuda
