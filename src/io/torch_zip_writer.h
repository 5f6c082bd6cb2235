// Writes the zip container of a torch.save file (the counterpart of io/torch_zip.h): every entry
// under one top folder ("archive/"), STORED, its data 64-byte aligned (padding in an extra field,
// as PyTorch's own writer does, so torch.load(mmap=True) works), a CRC-32 per entry, and ZIP64
// records wherever an offset or size passes 4 GiB (or always, for tests). The file is written
// beside its destination and renamed over it by commit(), so a failed write (a full disk, an I/O
// error) leaves whatever was at the destination untouched. Knows nothing of pickles.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "io/file_util.h"

namespace nanogpt {

struct TorchZipWriterOptions {
  bool force_zip64 = false;  // ZIP64 extra fields and end records even for a small archive
};

class TorchZipWriter {
 public:
  // Starts `<path>.partial`; entries go under `top_folder` + "/". Throws naming the path.
  TorchZipWriter(const std::string& path, std::string top_folder = "archive",
                 TorchZipWriterOptions options = {});
  ~TorchZipWriter();  // without commit(): removes the partial file, `path` untouched
  TorchZipWriter(const TorchZipWriter&) = delete;
  TorchZipWriter& operator=(const TorchZipWriter&) = delete;

  // One entry `<top>/<relative_name>` holding `bytes`, or the concatenation of `parts`.
  void add(const std::string& relative_name, std::span<const uint8_t> bytes);
  void add(const std::string& relative_name, const std::vector<std::span<const uint8_t>>& parts);
  // Writes the central directory, fsyncs, renames the file to `path` and fsyncs its folder.
  // Returns the bytes written.
  uint64_t commit();

 private:
  struct Written {
    std::string name;
    uint64_t local_offset = 0, size = 0;
    uint32_t crc = 0;
  };
  void put(const void* data, size_t n);

  std::string path_, partial_, top_;
  TorchZipWriterOptions options_;
  std::unique_ptr<FileWriter> file_;
  uint64_t offset_ = 0;
  std::vector<Written> entries_;
  bool committed_ = false;
};

}  // namespace nanogpt
