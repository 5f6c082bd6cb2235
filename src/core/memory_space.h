// MemorySpace: where an arena lives (the host's memory, a GPU's) and the byte operations every
// owner of memory needs there: allocate (zero-filled, 64-byte aligned), release, zero, copy within
// the space, and transfers to and from the host. Each compute backend is one (kernels/backend.h);
// Buffer<T> allocates from one (none: the host). Views never know which space they point into.
#pragma once

#include <cstddef>

namespace nanogpt {

class MemorySpace {
 public:
  virtual ~MemorySpace() = default;

  // "cpu", "cuda:0", ...: for messages.
  virtual const char* memory_name() const = 0;
  // Whether the host may read and write this space's pointers directly (the CPU's: yes).
  virtual bool host_addressable() const = 0;

  // bytes zero-filled, 64-byte aligned; throws nanogpt::Error naming the size when out of memory.
  virtual void* allocate(size_t bytes) = 0;
  virtual void release(void* p) noexcept = 0;
  // dst (bytes) = 0.
  virtual void zero_bytes(void* dst, size_t bytes) = 0;
  // dst = src, both in this space (they do not overlap).
  virtual void copy_bytes(void* dst, const void* src, size_t bytes) = 0;
  // dst in this space = host_src on the host; host_dst on the host = src in this space. Both
  // complete before they return (the host may reuse or read its side at once).
  virtual void upload(void* dst, const void* host_src, size_t bytes) = 0;
  virtual void download(void* host_dst, const void* src, size_t bytes) = 0;
};

}  // namespace nanogpt
