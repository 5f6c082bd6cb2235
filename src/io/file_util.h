// Plain file I/O for everything io/ persists: a buffered, checksumming, fsync-ing FileWriter (RAII
// fd), a read-only MappedFile (RAII mmap), whole-file reads, and directory fsync. Every error names
// the path and the OS reason.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace nanogpt {

// Size and CRC-32C of a file's bytes: what the checkpoint manifest records.
struct FileDigest {
  uint64_t bytes = 0;
  uint32_t crc32c = 0;
};

class FileWriter {
 public:
  // Creates/truncates `path` for writing. Throws naming the path.
  explicit FileWriter(const std::string& path);
  ~FileWriter();  // closes without fsync if close() was not called (error path)
  FileWriter(const FileWriter&) = delete;
  FileWriter& operator=(const FileWriter&) = delete;

  void write(const void* data, size_t n);
  // Flushes, fsyncs and closes; returns the digest of everything written. Throws on failure
  // (e.g. "No space left on device"), naming the path.
  FileDigest close();

 private:
  void flush();
  std::string path_;
  int fd_ = -1;
  std::vector<char> buf_;
  size_t used_ = 0;
  FileDigest digest_;
};

class MappedFile {
 public:
  // Maps `path` read-only. Throws naming the path (missing file, permissions).
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(MappedFile&& o) noexcept;
  MappedFile& operator=(MappedFile&&) = delete;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// Whole file as a string; throws naming the path.
std::string read_text_file(const std::string& path);
// Writes `text` to `path` (fsync'd) and returns its digest.
FileDigest write_text_file(const std::string& path, const std::string& text);
// Digest of an existing file's bytes.
FileDigest digest_file(const std::string& path);
// fsync a directory so renames/creates inside it are durable. Throws naming the path.
void fsync_directory(const std::string& path);
// "No such file or directory" etc. for errno.
std::string errno_text(int err);

}  // namespace nanogpt
