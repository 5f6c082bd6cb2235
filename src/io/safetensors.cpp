// safetensors reading (validated, mmap'd, F32/BF16/F16 -> float) and writing (F32, streamed).
#include "io/safetensors.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "core/check.h"
#include "core/float16.h"
#include "core/transpose.h"

namespace nanogpt {
namespace {

constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // the safetensors library's own limit

int dtype_bytes(const std::string& dtype) {
  static const std::map<std::string, int> kSizes = {
      {"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8}, {"I32", 4}, {"I16", 2},
      {"I8", 1},  {"U8", 1},  {"U16", 2}, {"U32", 4},  {"U64", 8}, {"BOOL", 1}};
  auto it = kSizes.find(dtype);
  return it == kSizes.end() ? 0 : it->second;
}

}  // namespace

int64_t SafeTensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shape_string(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

SafeTensorsReader::SafeTensorsReader(const std::string& path)
    : file_(path), name_(path), data_(file_.data()), size_(file_.size()) {
  parse_header();
}

SafeTensorsReader::SafeTensorsReader(std::string_view bytes, const std::string& name)
    : name_(name), data_(reinterpret_cast<const uint8_t*>(bytes.data())), size_(bytes.size()) {
  parse_header();
}

void SafeTensorsReader::parse_header() {
  const std::string& path = name_;
  const uint64_t size = size_;
  CHECK(size >= 8,
        "'{}' is truncated: {} bytes, but a safetensors file starts with an 8-byte "
        "header length",
        path, size);
  uint64_t n = 0;
  std::memcpy(&n, data_, 8);
  CHECK(n <= kMaxHeaderBytes,
        "'{}': header length {} is larger than the {} byte limit (not a "
        "safetensors file, or corrupted)",
        path, n, kMaxHeaderBytes);
  CHECK(n <= size - 8,
        "'{}' is truncated: header says {} bytes of JSON but the file has only {} "
        "bytes after the length field",
        path, n, size - 8);
  data_start_ = 8 + n;
  const uint64_t data_size = size - data_start_;
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(reinterpret_cast<const char*>(data_) + 8,
                                   reinterpret_cast<const char*>(data_) + 8 + n);
  } catch (const nlohmann::json::exception& e) {
    fail("'{}': header is not valid JSON ({})", path, e.what());
  }
  CHECK(header.is_object(), "'{}': header is not a JSON object", path);
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    const auto& v = it.value();
    if (name == "__metadata__") {
      CHECK(v.is_object(), "'{}': __metadata__ must be an object of strings", path);
      for (auto m = v.begin(); m != v.end(); ++m) {
        CHECK(m.value().is_string(), "'{}': __metadata__ key '{}' is not a string", path, m.key());
        metadata_[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    auto bad = [&](const std::string& what) {
      fail("'{}': tensor '{}': {} (entry: {})", path, name, what, v.dump());
    };
    if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") ||
        !v.contains("data_offsets")) {
      bad("expected an object with dtype, shape and data_offsets");
    }
    SafeTensorInfo info;
    if (!v["dtype"].is_string()) bad("dtype is not a string");
    info.dtype = v["dtype"].get<std::string>();
    const int elem = dtype_bytes(info.dtype);
    if (elem == 0) bad("unknown dtype '" + info.dtype + "'");
    if (!v["shape"].is_array()) bad("shape is not an array");
    for (const auto& d : v["shape"]) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0)
        bad("shape entries must be non-negative integers");
      info.shape.push_back(d.get<int64_t>());
    }
    const auto& off = v["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() ||
        !off[1].is_number_unsigned()) {
      bad("data_offsets must be [begin, end]");
    }
    info.begin = off[0].get<uint64_t>();
    info.end = off[1].get<uint64_t>();
    if (info.begin > info.end) bad("data_offsets begin > end");
    if (info.end > data_size) {
      fail(
          "'{}' is truncated: tensor '{}' ends at byte {} of the data section but the file holds "
          "only {} data bytes",
          path, name, info.end, data_size);
    }
    // Bytes the shape needs, computed without overflow: any product beyond the data section
    // (a "1 TB tensor" in a small file) is rejected before anything is sized from it.
    const bool empty = std::find(info.shape.begin(), info.shape.end(), 0) != info.shape.end();
    uint64_t need = empty ? 0 : static_cast<uint64_t>(elem);
    for (int64_t d : info.shape) {
      if (empty) break;
      if (need > data_size / static_cast<uint64_t>(d)) {
        bad(fmt::format("shape {} of {} needs more bytes than the file's whole data section ({})",
                        shape_string(info.shape), info.dtype, data_size));
      }
      need *= static_cast<uint64_t>(d);
    }
    if (info.end - info.begin != need) {
      bad(fmt::format("byte range holds {} bytes but shape {} of {} needs {}",
                      info.end - info.begin, shape_string(info.shape), info.dtype, need));
    }
    tensors_.emplace(name, std::move(info));
  }
}

const SafeTensorInfo& SafeTensorsReader::info(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) {
    std::vector<std::string> some;
    for (const auto& [k, v] : tensors_) {
      if (some.size() == 5) break;
      some.push_back(k);
    }
    fail("'{}': no tensor named '{}' (the file has {} tensors, e.g. {})", path(), name,
         tensors_.size(), fmt::join(some, ", "));
  }
  return it->second;
}

void SafeTensorsReader::read_f32(const std::string& name,
                                 const std::vector<int64_t>& expected_shape, float* out) const {
  read_f32_elements(name, expected_shape, 0, info(name).numel(), out);
}

void SafeTensorsReader::read_f32_elements(const std::string& name,
                                          const std::vector<int64_t>& expected_shape, int64_t first,
                                          int64_t count, float* out) const {
  const SafeTensorInfo& t = info(name);
  CHECK(t.shape == expected_shape,
        "'{}': tensor '{}' has shape {} but the model expects {} "
        "(does the model config match the file?)",
        path(), name, shape_string(t.shape), shape_string(expected_shape));
  CHECK(first >= 0 && count >= 0 && first + count <= t.numel(),
        "'{}': elements [{}, {}) are outside tensor '{}' of {} elements", path(), first,
        first + count, name, t.numel());
  const uint8_t* src = data_ + data_start_ + t.begin;
  const int64_t n = count;
  if (n == 0 && (t.dtype == "F32" || t.dtype == "BF16" || t.dtype == "F16")) return;
  if (t.dtype == "F32") {
    std::memcpy(out, src + 4 * first, static_cast<size_t>(n) * 4);
  } else if (t.dtype == "BF16" || t.dtype == "F16") {
    const bool bf16 = t.dtype == "BF16";
    for (int64_t i = 0; i < n; ++i) {
      uint16_t h;
      std::memcpy(&h, src + 2 * (first + i), 2);
      out[i] = bf16 ? bf16_to_float(h) : fp16_to_float(h);
    }
  } else {
    fail("'{}': tensor '{}' has dtype {}; expected F32, BF16 or F16", path(), name, t.dtype);
  }
}

void SafeTensorsWriter::add(const std::string& name, const std::vector<int64_t>& shape,
                            const float* data) {
  entries_.push_back({name, shape, data, Source::kPlain, 0, 0});
}

void SafeTensorsWriter::add_transposed(const std::string& name, int64_t rows, int64_t cols,
                                       const float* data) {
  entries_.push_back({name, {cols, rows}, data, Source::kTransposed, rows, cols});
}

void SafeTensorsWriter::add_zeros(const std::string& name, const std::vector<int64_t>& shape) {
  entries_.push_back({name, shape, nullptr, Source::kZeros, 0, 0});
}

FileDigest SafeTensorsWriter::write(const std::string& path) const {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata_.empty()) header["__metadata__"] = metadata_;
  uint64_t offset = 0;
  std::set<std::string> seen;
  for (const auto& e : entries_) {
    CHECK(seen.insert(e.name).second, "writing '{}': tensor '{}' added twice", path, e.name);
    int64_t numel = 1;
    for (int64_t d : e.shape) numel *= d;
    const uint64_t bytes = static_cast<uint64_t>(numel) * 4;
    header[e.name] = {
        {"dtype", "F32"}, {"shape", e.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // align the data section to 8 bytes
  const uint64_t n = text.size();
  FileWriter out(path);
  out.write(&n, 8);
  out.write(text.data(), text.size());
  std::vector<float> scratch;
  for (const auto& e : entries_) {
    int64_t numel = 1;
    for (int64_t d : e.shape) numel *= d;
    if (e.source == Source::kPlain) {
      out.write(e.data, static_cast<size_t>(numel) * 4);
    } else if (e.source == Source::kZeros) {
      scratch.assign(static_cast<size_t>(std::min<int64_t>(numel, 1 << 16)), 0.0f);
      for (int64_t done = 0; done < numel;) {
        const int64_t take = std::min<int64_t>(numel - done, static_cast<int64_t>(scratch.size()));
        out.write(scratch.data(), static_cast<size_t>(take) * 4);
        done += take;
      }
    } else {  // out (cols, rows) = in (rows, cols)^T, in blocks of 64 output rows
      const int64_t rows = e.rows, cols = e.cols, block = 64;
      scratch.resize(static_cast<size_t>(block * rows));
      for (int64_t j0 = 0; j0 < cols; j0 += block) {
        const int64_t nj = std::min(block, cols - j0);
        transpose_tiled(scratch.data(), rows, e.data + j0, cols, rows, nj);
        out.write(scratch.data(), static_cast<size_t>(nj * rows) * 4);
      }
    }
  }
  return out.close();
}

}  // namespace nanogpt
