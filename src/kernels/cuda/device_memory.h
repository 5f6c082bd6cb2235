// Device memory without CUDA headers: allocation that names what it was for when the GPU is full,
// host <-> device copies, and DeviceBuffer<T>, the RAII owner of one allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace nanogpt::cuda {

// cudaMalloc of `bytes`; throws nanogpt::Error naming `what`, the size and the GPU's free memory.
void* device_alloc(size_t bytes, const char* what);
void device_free(void* p);
// Synchronous copies (they wait for the queued work that writes or reads the memory).
void copy_to_device(void* dst, const void* src, size_t bytes);
void copy_to_host(void* dst, const void* src, size_t bytes);
// Queued copies and fills on the device.
void copy_device(void* dst, const void* src, size_t bytes);
void fill_zero_device(void* p, size_t bytes);
// Bytes in use on the GPU by every process (total - free), and the GPU's total.
size_t device_memory_used();
size_t device_memory_total();

template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t n, const char* what = "a device buffer")
      : data_(n ? static_cast<T*>(device_alloc(n * sizeof(T), what)) : nullptr), size_(n) {}
  ~DeviceBuffer() { device_free(data_); }
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      device_free(data_);
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  size_t bytes() const { return size_ * sizeof(T); }

  void upload(const T* src, size_t n) { copy_to_device(data_, src, n * sizeof(T)); }
  void upload(const std::vector<T>& v) { upload(v.data(), v.size()); }
  std::vector<T> download() const {
    std::vector<T> v(size_);
    if (size_) copy_to_host(v.data(), data_, bytes());
    return v;
  }
  void zero() {
    if (size_) fill_zero_device(data_, bytes());
  }

 private:
  T* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace nanogpt::cuda
