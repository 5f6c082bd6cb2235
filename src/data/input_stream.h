// InputStream: reads one input file of `prepare` front to back in chunks, decompressing gzip on the
// fly (recognized by its magic bytes, whatever the name; plain files are read as they are). zlib
// does both. Errors name the file; a truncated or corrupt .gz is an error, never silent.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace nanogpt {

class InputStream {
 public:
  // Opens path; throws nanogpt::Error naming it if it cannot be opened.
  explicit InputStream(const std::filesystem::path& path);
  ~InputStream();
  InputStream(const InputStream&) = delete;
  InputStream& operator=(const InputStream&) = delete;

  // Appends up to max_bytes (decompressed) bytes to out; returns how many (0 = end of file).
  size_t read(std::string& out, size_t max_bytes);
  // Bytes of the file itself consumed so far (compressed bytes for gzip): progress against the
  // file's size.
  int64_t file_offset() const;
  bool gzip() const { return gzip_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  void* file_ = nullptr;  // gzFile (zlib)
  bool gzip_ = false;
};

// True if the file starts with gzip's magic bytes 1F 8B.
bool is_gzip_file(const std::filesystem::path& path);

}  // namespace nanogpt
