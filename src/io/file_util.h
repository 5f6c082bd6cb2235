// Plain file I/O for everything io/ persists: a buffered, checksumming, fsync-ing FileWriter (RAII
// fd), whole-file reads (through core's MappedFile), and directory fsync. Every error names
// the path and the OS reason.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/mapped_file.h"

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
