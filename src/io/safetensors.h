// The safetensors format (Hugging Face): 8-byte little-endian header length N, N bytes of JSON
// {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {str: str}}, then the
// raw little-endian tensor bytes (offsets relative to the end of the header).
// SafeTensorsReader maps a file and validates it; SafeTensorsWriter streams F32 tensors out.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "io/file_util.h"

namespace nanogpt {

struct SafeTensorInfo {
  std::string dtype;  // "F32", "BF16", "F16", ... as in the file
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // byte range within the data section
  int64_t numel() const;
};

// "[3, 4]" for messages.
std::string shape_string(const std::vector<int64_t>& shape);

class SafeTensorsReader {
 public:
  // Maps and validates the whole header: size fields, JSON, every entry's dtype, shape and byte
  // range. Throws nanogpt::Error naming the file (and tensor) on anything malformed.
  explicit SafeTensorsReader(const std::string& path);
  // The same over a file's bytes held by the caller (they must outlive the reader); `name` stands
  // for the path in errors.
  SafeTensorsReader(std::string_view bytes, const std::string& name);

  const std::string& path() const { return name_; }
  bool contains(const std::string& name) const { return tensors_.count(name) > 0; }
  // Throws naming the file and the tensor when absent.
  const SafeTensorInfo& info(const std::string& name) const;
  const std::map<std::string, SafeTensorInfo>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

  // Copies tensor `name` into out (numel floats), converting BF16/F16 to float. Throws naming the
  // file and tensor when it is absent, its dtype is not F32/BF16/F16, or its shape differs from
  // expected_shape.
  void read_f32(const std::string& name, const std::vector<int64_t>& expected_shape,
                float* out) const;
  // The same for the stored (row-major) elements [first, first + count) only, into out (count
  // floats); throws naming the file and tensor when the range is outside the tensor.
  void read_f32_elements(const std::string& name, const std::vector<int64_t>& expected_shape,
                         int64_t first, int64_t count, float* out) const;

 private:
  void parse_header();

  MappedFile file_;                // when constructed from a path
  std::string name_;               // the path, or the name given with the bytes
  const uint8_t* data_ = nullptr;  // the whole file: file_'s mapping or the caller's bytes
  uint64_t size_ = 0;
  uint64_t data_start_ = 0;
  std::map<std::string, SafeTensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

class SafeTensorsWriter {
 public:
  // Adds a float32 tensor; `data` (numel floats, row-major) must stay valid until write().
  void add(const std::string& name, const std::vector<int64_t>& shape, const float* data);
  // Adds the transpose of `data` (rows, cols): stored with shape (cols, rows).
  void add_transposed(const std::string& name, int64_t rows, int64_t cols, const float* data);
  // Adds a tensor of zeros.
  void add_zeros(const std::string& name, const std::vector<int64_t>& shape);
  void set_metadata(std::map<std::string, std::string> metadata) {
    metadata_ = std::move(metadata);
  }

  // Writes the file and fsyncs it; returns its digest. Throws naming the path on I/O errors.
  FileDigest write(const std::string& path) const;

 private:
  enum class Source { kPlain, kTransposed, kZeros };
  struct Entry {
    std::string name;
    std::vector<int64_t> shape;  // as stored in the file
    const float* data = nullptr;
    Source source = Source::kPlain;
    int64_t rows = 0, cols = 0;  // source layout for kTransposed
  };
  std::vector<Entry> entries_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace nanogpt
