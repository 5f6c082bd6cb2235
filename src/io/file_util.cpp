// FileWriter and small file helpers on POSIX calls.
#include "io/file_util.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/check.h"
#include "io/crc32c.h"

namespace nanogpt {

std::string errno_text(int err) { return std::strerror(err); }

FileWriter::FileWriter(const std::string& path) : path_(path), buf_(1 << 20) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  CHECK(fd_ >= 0, "cannot create '{}': {} (check that the directory exists and is writable)", path,
        errno_text(errno));
}

FileWriter::~FileWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void FileWriter::flush() {
  size_t done = 0;
  while (done < used_) {
    ssize_t w = ::write(fd_, buf_.data() + done, used_ - done);
    if (w < 0 && errno == EINTR) continue;
    CHECK(w > 0, "writing '{}' failed after {} bytes: {} (free disk space and retry)", path_,
          digest_.bytes - used_ + done, w < 0 ? errno_text(errno) : std::string("wrote 0 bytes"));
    done += static_cast<size_t>(w);
  }
  used_ = 0;
}

void FileWriter::write(const void* data, size_t n) {
  CHECK(fd_ >= 0, "writing '{}' after close", path_);
  digest_.crc32c = crc32c(data, n, digest_.crc32c);
  digest_.bytes += n;
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    size_t take = std::min(n, buf_.size() - used_);
    std::memcpy(buf_.data() + used_, p, take);
    used_ += take;
    p += take;
    n -= take;
    if (used_ == buf_.size()) flush();
  }
}

FileDigest FileWriter::close() {
  CHECK(fd_ >= 0, "closing '{}' twice", path_);
  flush();
  CHECK(::fsync(fd_) == 0 || errno == EINVAL, "fsync of '{}' failed: {}", path_, errno_text(errno));
  int fd = fd_;
  fd_ = -1;
  CHECK(::close(fd) == 0, "closing '{}' failed: {}", path_, errno_text(errno));
  return digest_;
}

std::string read_text_file(const std::string& path) {
  MappedFile f(path);
  return std::string(reinterpret_cast<const char*>(f.data()), f.size());
}

FileDigest write_text_file(const std::string& path, const std::string& text) {
  FileWriter w(path);
  w.write(text.data(), text.size());
  return w.close();
}

FileDigest digest_file(const std::string& path) {
  MappedFile f(path);
  return {f.size(), crc32c(f.data(), f.size())};
}

void fsync_directory(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  CHECK(fd >= 0, "cannot open directory '{}': {}", path, errno_text(errno));
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  CHECK(rc == 0 || err == EINVAL, "fsync of directory '{}' failed: {}", path, errno_text(err));
}

}  // namespace nanogpt
