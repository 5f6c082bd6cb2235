// TokenSplitWriter: segment files written with write(2), the cut at n_train (tail copy through a
// bounded buffer, ftruncate), llm.c headers patched with pwrite, fdatasync before the commit.
#include "data/token_split_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <limits>

#include "core/check.h"

namespace nanogpt {

namespace {

[[noreturn]] void write_failed(const std::string& path, int err) {
  fail(
      "writing '{}' failed: {} (is the disk full?); prepare stopped and removed its partial "
      "files",
      path, std::strerror(err));
}

void write_all(int fd, const void* data, size_t bytes, const std::string& path) {
  const auto* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::write(fd, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) write_failed(path, n < 0 ? errno : ENOSPC);
    p += n;
    bytes -= static_cast<size_t>(n);
  }
}

void pwrite_all(int fd, const void* data, size_t bytes, off_t offset, const std::string& path) {
  const auto* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::pwrite(fd, p, bytes, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) write_failed(path, n < 0 ? errno : ENOSPC);
    p += n;
    offset += n;
    bytes -= static_cast<size_t>(n);
  }
}

void pread_all(int fd, void* data, size_t bytes, off_t offset, const std::string& path) {
  auto* p = static_cast<char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::pread(fd, p, bytes, offset);
    if (n < 0 && errno == EINTR) continue;
    CHECK(n > 0, "reading back '{}' failed: {}", path, n < 0 ? std::strerror(errno) : "short file");
    p += n;
    offset += n;
    bytes -= static_cast<size_t>(n);
  }
}

int open_file(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC, 0644);
  CHECK(fd >= 0, "cannot open '{}': {} (is out_dir writable?)", path, std::strerror(errno));
  return fd;
}

// Closes fd; a failing close (NFS, delayed write errors) is a write error of path.
void close_file(int fd, const std::string& path) {
  if (::close(fd) != 0 && errno != EINTR) write_failed(path, errno);
}

}  // namespace

TokenSplitWriter::TokenSplitWriter(PrepareOutput& output, TokenFormat format,
                                   int64_t max_file_tokens)
    : output_(output), format_(format), max_file_tokens_(max_file_tokens) {
  CHECK(format == TokenFormat::kNanogpt || format == TokenFormat::kLlmc,
        "TokenSplitWriter: format must be nanogpt or llmc");
  CHECK(max_file_tokens >= 1 && (format == TokenFormat::kNanogpt ||
                                 max_file_tokens <= std::numeric_limits<int32_t>::max()),
        "TokenSplitWriter: max_file_tokens {} out of range", max_file_tokens);
  open_segment();
}

TokenSplitWriter::~TokenSplitWriter() {
  if (fd_ >= 0) ::close(fd_);
}

TokenSplitWriter::File TokenSplitWriter::new_file(const std::string& name, int& fd) {
  File f;
  f.path = output_.partial_path(name);
  fd = open_file(f.path, O_WRONLY | O_CREAT | O_TRUNC);
  if (header_bytes() > 0) {
    const std::array<char, kLlmcHeaderBytes> zeros{};
    write_all(fd, zeros.data(), zeros.size(), f.path);
  }
  return f;
}

void TokenSplitWriter::open_segment() {
  segments_.push_back(new_file(fmt::format("tokens_{:06d}", segments_.size()), fd_));
}

void TokenSplitWriter::close_current() {
  if (fd_ < 0) return;
  const int fd = fd_;
  fd_ = -1;
  close_file(fd, segments_.back().path);
}

void TokenSplitWriter::append(std::span<const uint16_t> tokens) {
  while (!tokens.empty()) {
    File& seg = segments_.back();
    if (seg.tokens == max_file_tokens_) {
      close_current();
      open_segment();
      continue;
    }
    const auto n = static_cast<size_t>(
        std::min<int64_t>(max_file_tokens_ - seg.tokens, static_cast<int64_t>(tokens.size())));
    write_all(fd_, tokens.data(), n * sizeof(uint16_t), seg.path);
    seg.tokens += static_cast<int64_t>(n);
    total_ += static_cast<int64_t>(n);
    tokens = tokens.subspan(n);
  }
}

TokenSplitWriter::Split TokenSplitWriter::split(int64_t n_train, size_t buffer_bytes) {
  CHECK(n_train >= 0 && n_train <= total_, "TokenSplitWriter::split: n_train {} not in [0, {}]",
        n_train, total_);
  close_current();
  const int64_t hb = header_bytes();
  const int64_t k = n_train / max_file_tokens_;  // the segment holding the cut
  const int64_t r = n_train % max_file_tokens_;  // train tokens in it
  const auto m = static_cast<int64_t>(segments_.size());
  Split out;
  for (int64_t i = 0; i < k; ++i) out.train.push_back(segments_[i]);
  if (k < m) {
    File& seg = segments_[k];
    const int64_t tail = seg.tokens - r;
    if (r == 0) {
      (tail > 0 ? out.val : out.train).push_back(seg);
    } else {
      if (tail > 0) {
        int fd = -1;
        File t = new_file("val_tail", fd);
        const int in = open_file(seg.path, O_RDONLY);
        std::vector<char> buffer(
            std::max<size_t>(2, std::min<size_t>(buffer_bytes / 2 * 2, 2 * tail)));
        try {
          for (int64_t done = 0; done < tail;) {
            const int64_t n = std::min<int64_t>(tail - done, buffer.size() / 2);
            pread_all(in, buffer.data(), 2 * n, hb + 2 * (r + done), seg.path);
            write_all(fd, buffer.data(), 2 * n, t.path);
            done += n;
          }
        } catch (...) {
          ::close(in);
          ::close(fd);
          throw;
        }
        ::close(in);
        close_file(fd, t.path);
        t.tokens = tail;
        out.val.push_back(t);
      }
      const int fd = open_file(seg.path, O_WRONLY);
      if (::ftruncate(fd, hb + 2 * r) != 0) {
        const int err = errno;
        ::close(fd);
        write_failed(seg.path, err);
      }
      close_file(fd, seg.path);
      seg.tokens = r;
      out.train.push_back(seg);
    }
    for (int64_t i = k + 1; i < m; ++i) out.val.push_back(segments_[i]);
  }
  if (out.train.empty()) {  // n_train == 0: an empty train file, as the nanoGPT recipe writes
    int fd = -1;
    out.train.push_back(new_file("train_empty", fd));
    close_file(fd, out.train.back().path);
  }
  output_.stage("split");
  for (const auto* files : {&out.train, &out.val}) {
    for (const File& f : *files) {
      const int fd = open_file(f.path, O_WRONLY);
      if (format_ == TokenFormat::kLlmc) {
        std::array<int32_t, kLlmcHeaderInts> header{};
        header[0] = kLlmcShardMagic;
        header[1] = kLlmcShardVersion;
        header[2] = static_cast<int32_t>(f.tokens);
        pwrite_all(fd, header.data(), sizeof(header), 0, f.path);
      }
      if (::fdatasync(fd) != 0) {
        const int err = errno;
        ::close(fd);
        write_failed(f.path, err);
      }
      close_file(fd, f.path);
    }
  }
  segments_.clear();
  return out;
}

}  // namespace nanogpt
