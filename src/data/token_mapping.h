// TokenMapping: a read-only memory mapping of a whole token file (RAII: unmapped and closed on
// destruction). Move-only. Used by TokenFile in `mmap` mode; the OS pages the file in on demand.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace nanogpt {

enum class AccessPattern { kNormal, kRandom, kSequential };

class TokenMapping {
 public:
  TokenMapping() = default;
  // Maps `path` read-only. Throws nanogpt::Error naming the file if it cannot be opened or mapped.
  explicit TokenMapping(const std::string& path);
  TokenMapping(const TokenMapping&) = delete;
  TokenMapping& operator=(const TokenMapping&) = delete;
  TokenMapping(TokenMapping&& o) noexcept { swap(o); }
  TokenMapping& operator=(TokenMapping&& o) noexcept {
    TokenMapping tmp(std::move(o));
    swap(tmp);
    return *this;
  }
  ~TokenMapping();

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  // madvise hint for the whole mapping (best effort; errors are ignored).
  void advise(AccessPattern pattern) const;
  // Asks the OS to start reading [offset, offset + bytes) (MADV_WILLNEED; best effort).
  void prefetch(size_t offset, size_t bytes) const;

 private:
  void swap(TokenMapping& o) noexcept;
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace nanogpt
