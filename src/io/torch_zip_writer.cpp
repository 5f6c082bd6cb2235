// The zip container of a torch.save file, written (see torch_zip_writer.h).
#include "io/torch_zip_writer.h"

#include <filesystem>

#include "core/check.h"
#include "io/torch_zip.h"

namespace nanogpt {
namespace {

constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEndSig = 0x06054b50;
constexpr uint32_t kZip64EndSig = 0x06064b50, kZip64LocatorSig = 0x07064b50;
constexpr uint64_t kLimit32 = 0xFFFFFFFFu;
constexpr uint16_t kVersion = 45;    // 4.5: ZIP64 (what PyTorch's miniz writes)
constexpr uint16_t kDosDate = 0x21;  // 1980-01-01, 00:00: a fixed time, like torch.save's
constexpr uint64_t kAlignment = 64;

// Little-endian fields appended to a byte string.
struct Bytes {
  std::string s;
  void u16(uint16_t v) {
    for (int i = 0; i < 2; ++i) s.push_back(static_cast<char>(v >> (8 * i)));
  }
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>(v >> (8 * i)));
  }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>(v >> (8 * i)));
  }
};

uint32_t saturated(uint64_t v, bool zip64) {
  return zip64 || v >= kLimit32 ? static_cast<uint32_t>(kLimit32) : static_cast<uint32_t>(v);
}

}  // namespace

TorchZipWriter::TorchZipWriter(const std::string& path, std::string top_folder,
                               TorchZipWriterOptions options)
    : path_(path), partial_(path + ".partial"), top_(std::move(top_folder)), options_(options) {
  CHECK(!top_.empty() && top_.find('/') == std::string::npos,
        "torch zip writer: top folder '{}' must be one non-empty name", top_);
  file_ = std::make_unique<FileWriter>(partial_);
}

TorchZipWriter::~TorchZipWriter() {
  if (!committed_) {
    file_.reset();
    std::error_code ignored;
    std::filesystem::remove(partial_, ignored);
  }
}

void TorchZipWriter::put(const void* data, size_t n) {
  file_->write(data, n);
  offset_ += n;
}

void TorchZipWriter::add(const std::string& relative_name, std::span<const uint8_t> bytes) {
  add(relative_name, std::vector<std::span<const uint8_t>>{bytes});
}

void TorchZipWriter::add(const std::string& relative_name,
                         const std::vector<std::span<const uint8_t>>& parts) {
  CHECK(!committed_, "torch zip writer: '{}' is already committed", path_);
  const std::string name = top_ + "/" + relative_name;
  CHECK(name.size() < 0xFFFF, "torch zip writer: entry name '{}' is too long", name);
  Written w{name, offset_, 0, 0};
  for (const auto& p : parts) {
    w.size += p.size();
    w.crc = zip_crc32(p.data(), p.size(), w.crc);
  }
  const bool zip64 = options_.force_zip64 || w.size >= kLimit32;
  // Extra data: ZIP64 sizes (local headers carry both), then padding that aligns the data.
  Bytes extra;
  if (zip64) {
    extra.u16(1);
    extra.u16(16);
    extra.u64(w.size);
    extra.u64(w.size);
  }
  const uint64_t before_pad = offset_ + 30 + name.size() + extra.s.size() + 4;
  const uint64_t pad = (kAlignment - before_pad % kAlignment) % kAlignment;
  extra.u16(0x4246);  // "FB", PyTorch's padding field id
  extra.u16(static_cast<uint16_t>(pad));
  extra.s.append(pad, 'Z');

  Bytes h;
  h.u32(kLocalSig);
  h.u16(kVersion);
  h.u16(0);  // flags
  h.u16(0);  // STORED
  h.u16(0);  // time
  h.u16(kDosDate);
  h.u32(w.crc);
  h.u32(saturated(w.size, zip64));
  h.u32(saturated(w.size, zip64));
  h.u16(static_cast<uint16_t>(name.size()));
  h.u16(static_cast<uint16_t>(extra.s.size()));
  h.s += name;
  h.s += extra.s;
  put(h.s.data(), h.s.size());
  for (const auto& p : parts) put(p.data(), p.size());
  entries_.push_back(std::move(w));
}

uint64_t TorchZipWriter::commit() {
  CHECK(!committed_, "torch zip writer: '{}' is already committed", path_);
  const uint64_t cd_offset = offset_;
  for (const Written& w : entries_) {
    const bool big_size = options_.force_zip64 || w.size >= kLimit32;
    const bool big_offset = options_.force_zip64 || w.local_offset >= kLimit32;
    Bytes extra;
    if (big_size || big_offset) {
      extra.u16(1);
      extra.u16(static_cast<uint16_t>((big_size ? 16 : 0) + (big_offset ? 8 : 0)));
      if (big_size) {
        extra.u64(w.size);
        extra.u64(w.size);
      }
      if (big_offset) extra.u64(w.local_offset);
    }
    Bytes c;
    c.u32(kCentralSig);
    c.u16(kVersion);  // made by
    c.u16(kVersion);  // needed
    c.u16(0);
    c.u16(0);
    c.u16(0);
    c.u16(kDosDate);
    c.u32(w.crc);
    c.u32(saturated(w.size, big_size));
    c.u32(saturated(w.size, big_size));
    c.u16(static_cast<uint16_t>(w.name.size()));
    c.u16(static_cast<uint16_t>(extra.s.size()));
    c.u16(0);  // comment
    c.u16(0);  // disk
    c.u16(0);  // internal attributes
    c.u32(0);  // external attributes
    c.u32(saturated(w.local_offset, big_offset));
    c.s += w.name;
    c.s += extra.s;
    put(c.s.data(), c.s.size());
  }
  const uint64_t cd_size = offset_ - cd_offset;
  const uint64_t count = entries_.size();
  const bool zip64 =
      options_.force_zip64 || cd_offset >= kLimit32 || cd_size >= kLimit32 || count >= 0xFFFF;
  Bytes e;
  if (zip64) {
    const uint64_t record = offset_;
    e.u32(kZip64EndSig);
    e.u64(44);  // the record's size after this field
    e.u16(kVersion);
    e.u16(kVersion);
    e.u32(0);
    e.u32(0);
    e.u64(count);
    e.u64(count);
    e.u64(cd_size);
    e.u64(cd_offset);
    e.u32(kZip64LocatorSig);
    e.u32(0);
    e.u64(record);
    e.u32(1);
  }
  e.u32(kEndSig);
  e.u16(0);
  e.u16(0);
  e.u16(zip64 ? 0xFFFF : static_cast<uint16_t>(count));
  e.u16(zip64 ? 0xFFFF : static_cast<uint16_t>(count));
  e.u32(saturated(cd_size, zip64));
  e.u32(saturated(cd_offset, zip64));
  e.u16(0);  // comment
  put(e.s.data(), e.s.size());
  file_->close();
  file_.reset();
  std::error_code ec;
  std::filesystem::rename(partial_, path_, ec);
  CHECK(!ec, "cannot rename '{}' to '{}': {}", partial_, path_, ec.message());
  committed_ = true;
  const std::string folder = std::filesystem::path(path_).parent_path().string();
  fsync_directory(folder.empty() ? "." : folder);
  return offset_;
}

}  // namespace nanogpt
