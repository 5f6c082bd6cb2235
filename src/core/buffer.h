// Buffer<T>: a move-only, 64-byte aligned owning array (the one owner type for big memory: params,
// grads, optimizer state, activations), zero-filled, in the host's memory or in a MemorySpace's
// (core/memory_space.h: a backend's, e.g. a GPU's). Optionally reports its bytes to a
// MemoryTracker. Views (plain pointers / Tensor) never own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#include "core/check.h"
#include "core/memory.h"
#include "core/memory_space.h"

namespace nanogpt {

template <typename T>
class Buffer {
 public:
  Buffer() = default;
  // n elements, zero-filled, in `space` (null: the host). tracker may be null.
  explicit Buffer(size_t n, MemoryTracker* tracker = nullptr, MemorySpace* space = nullptr)
      : size_(n), tracker_(tracker), space_(space) {
    if (n == 0) return;
    size_t bytes = bytes_();
    if (space_) {
      data_ = static_cast<T*>(space_->allocate(bytes));
    } else {
      data_ = static_cast<T*>(std::aligned_alloc(64, bytes));
      CHECK(data_ != nullptr, "out of memory allocating {} bytes", bytes);
      std::memset(static_cast<void*>(data_), 0, bytes);
    }
    if (tracker_) tracker_->add(static_cast<int64_t>(bytes_()));
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& o) noexcept { swap(o); }
  Buffer& operator=(Buffer&& o) noexcept {
    Buffer tmp(std::move(o));
    swap(tmp);
    return *this;
  }
  ~Buffer() {
    if (data_) {
      if (tracker_) tracker_->sub(static_cast<int64_t>(bytes_()));
      if (space_) {
        space_->release(data_);
      } else {
        std::free(data_);
      }
    }
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  // The space it lives in (null: the host).
  MemorySpace* space() const { return space_; }
  void zero() {
    if (!data_) return;
    if (space_) {
      space_->zero_bytes(data_, size_ * sizeof(T));
    } else {
      std::memset(static_cast<void*>(data_), 0, size_ * sizeof(T));
    }
  }

 private:
  size_t bytes_() const { return (size_ * sizeof(T) + 63) / 64 * 64; }
  void swap(Buffer& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    std::swap(tracker_, o.tracker_);
    std::swap(space_, o.space_);
  }
  T* data_ = nullptr;
  size_t size_ = 0;
  MemoryTracker* tracker_ = nullptr;
  MemorySpace* space_ = nullptr;
};

}  // namespace nanogpt
