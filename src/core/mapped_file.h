// MappedFile: a read-only memory mapping of a whole file (RAII: unmapped on destruction),
// move-only. Token files in `mmap` mode and safetensors / llm.c model readers use it; the OS pages
// the file in on demand.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace nanogpt {

enum class AccessPattern { kNormal, kRandom, kSequential };

class MappedFile {
 public:
  MappedFile() = default;
  // Maps `path` read-only. Throws nanogpt::Error naming the file if it cannot be opened or mapped.
  explicit MappedFile(const std::string& path);
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  MappedFile(MappedFile&& o) noexcept { swap(o); }
  MappedFile& operator=(MappedFile&& o) noexcept {
    MappedFile tmp(std::move(o));
    swap(tmp);
    return *this;
  }
  ~MappedFile();

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // madvise hint for the whole mapping (best effort; errors are ignored).
  void advise(AccessPattern pattern) const;
  // Asks the OS to start reading [offset, offset + bytes) (MADV_WILLNEED; best effort).
  void prefetch(size_t offset, size_t bytes) const;
  // Drops [offset, offset + bytes) from this process's resident pages (MADV_DONTNEED: the page
  // cache keeps them, a later read maps them again), so reading a large file does not grow RSS.
  void release(size_t offset, size_t bytes) const;

 private:
  void swap(MappedFile& o) noexcept;
  std::string path_;
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace nanogpt
