// MappedFile: mmap/munmap of a whole file read-only, and madvise hints.
#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "core/check.h"

namespace nanogpt {

MappedFile::MappedFile(const std::string& path) : path_(path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  CHECK(fd >= 0, "cannot open '{}' for reading: {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    fail("cannot stat '{}': {}", path, std::strerror(err));
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd, 0);
    int err = errno;
    ::close(fd);
    CHECK(p != MAP_FAILED, "cannot mmap '{}' ({} bytes): {}; try data_mode='preload'", path, size_,
          std::strerror(err));
    data_ = static_cast<uint8_t*>(p);
  } else {
    ::close(fd);
  }
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(data_, size_);
}

void MappedFile::advise(AccessPattern pattern) const {
  if (!data_) return;
  int advice = MADV_NORMAL;
  if (pattern == AccessPattern::kRandom) advice = MADV_RANDOM;
  if (pattern == AccessPattern::kSequential) advice = MADV_SEQUENTIAL;
  ::madvise(data_, size_, advice);
}

void MappedFile::prefetch(size_t offset, size_t bytes) const {
  if (!data_ || offset >= size_) return;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  size_t begin = offset / page * page;
  size_t end = std::min(size_, offset + bytes);
  ::madvise(data_ + begin, end - begin, MADV_WILLNEED);
}

void MappedFile::release(size_t offset, size_t bytes) const {
  if (!data_ || offset >= size_) return;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t begin = offset / page * page;
  const size_t end = std::min(size_, offset + bytes);
  ::madvise(data_ + begin, end - begin, MADV_DONTNEED);
}

void MappedFile::swap(MappedFile& o) noexcept {
  std::swap(path_, o.path_);
  std::swap(data_, o.data_);
  std::swap(size_, o.size_);
}

}  // namespace nanogpt
