// CpuBackend construction (creates the oneDNN CPU engine and stream: oneDNN runs on the same
// OpenMP runtime as our kernels; applies the CPU target the dispatched kernels run at) and its
// memory: the host's, 64-byte aligned.
#include "kernels/cpu_backend.h"

#include <cstdlib>
#include <cstring>

#include "core/check.h"
#include "kernels/backend_info.h"
#include "kernels/cpu/context_impl.h"

namespace nanogpt {

CpuBackend::CpuBackend() : impl_(std::make_unique<Impl>()) {
  apply_cpu_target(impl_->cpu_target);
}
CpuBackend::~CpuBackend() = default;

std::string CpuBackend::cpu_target_description() const { return impl_->cpu_target.describe(); }

void* CpuBackend::allocate(size_t bytes) {
  const size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  CHECK(p != nullptr, "out of host memory allocating {} bytes", rounded);
  std::memset(p, 0, rounded == 0 ? 64 : rounded);
  return p;
}
void CpuBackend::release(void* p) noexcept { std::free(p); }
void CpuBackend::zero_bytes(void* dst, size_t bytes) {
  if (bytes) std::memset(dst, 0, bytes);
}
void CpuBackend::copy_bytes(void* dst, const void* src, size_t bytes) {
  if (bytes) std::memcpy(dst, src, bytes);
}
void CpuBackend::upload(void* dst, const void* host_src, size_t bytes) {
  copy_bytes(dst, host_src, bytes);
}
void CpuBackend::download(void* host_dst, const void* src, size_t bytes) {
  copy_bytes(host_dst, src, bytes);
}

}  // namespace nanogpt
