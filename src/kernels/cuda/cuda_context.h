// CudaContext: the process's handle on one NVIDIA GPU (device 0): the cuBLAS and cuBLASLt handles,
// cuBLASLt's workspace, and a small scratch arena the ops borrow per call. RAII; one per run.
// This header includes no CUDA header, so host code (gpu/cuda_training, tests) compiles with g++ alone.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

namespace nanogpt::cuda {

// Whether a usable CUDA device exists; when not, `why` (nullable) gets the reason (no driver,
// no device, CUDA error text). Costs nothing after the first call.
bool device_available(std::string* why = nullptr);

// GPUs this process sees (CUDA_VISIBLE_DEVICES applied); 0 without a driver or device.
int visible_device_count();

// The name of device `device` ("NVIDIA H200"); "" without a device.
std::string device_name(int device = 0);

// The device's compute capability as major * 10 + minor (90 for an H100 / H200); 0 without one.
int device_compute_capability(int device = 0);

// Ampere's compute capability (sm_80: A100, RTX 30xx and later), where bfloat16 tensor cores,
// TF32 and cp.async start: the flash kernels' architectures (CMakeLists.txt), TF32 here, and
// bfloat16 training (gpu/cuda_training.h) begin there.
inline constexpr int kAmpereComputeCapability = 80;

// "NVIDIA H200, 132 SMs, 139.8 GiB, compute capability 9.0, driver 13.0".
std::string device_description(int device = 0);

class CudaContext {
 public:
  // Selects device `device` (an index among the visible GPUs: a data-parallel rank's, launch_env.h
  // assign_gpu) and creates the handles; throws nanogpt::Error with the CUDA error text when no
  // device is usable. allow_tf32: float32 matmuls run on the tensor cores in TF32 (nanoGPT's
  // torch.backends.cuda.matmul.allow_tf32, which its train.py sets; sm_80 and later only).
  explicit CudaContext(bool allow_tf32 = true, int device = 0);
  ~CudaContext();
  CudaContext(const CudaContext&) = delete;
  CudaContext& operator=(const CudaContext&) = delete;

  bool allow_tf32() const { return allow_tf32_; }
  int device() const { return device_; }
  void* cublas() const { return cublas_; }      // cublasHandle_t
  void* cublaslt() const { return cublaslt_; }  // cublasLtHandle_t
  void* lt_workspace() const { return lt_workspace_; }
  size_t lt_workspace_bytes() const { return lt_workspace_bytes_; }

  // A device scratch area of at least `bytes` (grown, never shrunk; contents undefined). One
  // borrower at a time: an op may use it for the duration of its call only (stream-ordered).
  void* scratch(size_t bytes);

  // The cuBLASLt algorithm chosen for each product shape (matmul.cu's key -> the 64 bytes of a
  // cublasLtMatmulAlgo_t, [8] = 1 when one was found): the heuristic, tens of microseconds of host
  // time, then runs once per shape instead of once per call.
  std::map<std::string, std::array<uint64_t, 9>>& matmul_algos() { return matmul_algos_; }

  // Waits for the device and turns an asynchronous kernel error into nanogpt::Error naming `what`.
  void synchronize(const char* what = "CUDA work");

 private:
  bool allow_tf32_ = true;
  int device_ = 0;
  void* cublas_ = nullptr;
  void* cublaslt_ = nullptr;
  void* lt_workspace_ = nullptr;
  size_t lt_workspace_bytes_ = 0;
  void* scratch_ = nullptr;
  size_t scratch_bytes_ = 0;
  std::map<std::string, std::array<uint64_t, 9>> matmul_algos_;
};

}  // namespace nanogpt::cuda
