// Reading torch.save's zip container: end of central directory (with the ZIP64 locator and record),
// central directory entries (with ZIP64 extra fields), local headers; STORED entries only. Every
// field read is bounds-checked against the file size before use.
#include "io/torch_zip.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "core/check.h"

namespace nanogpt {
namespace {

constexpr uint32_t kLocalHeaderSig = 0x04034b50;   // "PK\3\4"
constexpr uint32_t kCentralSig = 0x02014b50;       // "PK\1\2"
constexpr uint32_t kEndSig = 0x06054b50;           // "PK\5\6"
constexpr uint32_t kZip64EndSig = 0x06064b50;      // "PK\6\6"
constexpr uint32_t kZip64LocatorSig = 0x07064b50;  // "PK\6\7"
constexpr uint64_t kEndBytes = 22, kZip64LocatorBytes = 20, kZip64EndBytes = 56;
constexpr uint64_t kCentralBytes = 46, kLocalBytes = 30;
constexpr uint64_t kMaxComment = 65535;
constexpr uint64_t kMaxEntries = 1 << 22;  // torch writes one entry per storage, plus a few

// Little-endian field reader over [data, data + size): reads past the end throw naming `what`.
class Cursor {
 public:
  Cursor(const uint8_t* data, uint64_t size, const std::string& path)
      : data_(data), size_(size), path_(path) {}
  // Little-endian unsigned of `n` bytes at `pos`.
  uint64_t get(uint64_t pos, int n, const char* what) const {
    CHECK(pos <= size_ && static_cast<uint64_t>(n) <= size_ - pos,
          "'{}' is truncated or corrupt: the zip {} at byte {} ends past the end of the file "
          "({} bytes)",
          path_, what, pos, size_);
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | data_[pos + i];
    return v;
  }
  uint32_t u32(uint64_t pos, const char* what) const {
    return static_cast<uint32_t>(get(pos, 4, what));
  }
  uint16_t u16(uint64_t pos, const char* what) const {
    return static_cast<uint16_t>(get(pos, 2, what));
  }
  uint64_t u64(uint64_t pos, const char* what) const { return get(pos, 8, what); }
  // The `n` bytes at `pos` as a string, checked like get().
  std::string str(uint64_t pos, uint64_t n, const char* what) const {
    CHECK(pos <= size_ && n <= size_ - pos,
          "'{}' is truncated or corrupt: the zip {} at byte {} ({} bytes) ends past the end of "
          "the file ({} bytes)",
          path_, what, pos, n, size_);
    return std::string(reinterpret_cast<const char*>(data_ + pos), n);
  }

 private:
  const uint8_t* data_;
  uint64_t size_;
  const std::string& path_;
};

const std::array<uint32_t, 256>& crc_table() {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  return table;
}

const char* method_name(uint16_t method) {
  switch (method) {
    case 8:
      return "deflate";
    case 9:
      return "deflate64";
    case 12:
      return "bzip2";
    case 14:
      return "lzma";
    case 93:
      return "zstd";
    default:
      return "unknown";
  }
}

}  // namespace

uint32_t zip_crc32(const void* data, size_t bytes, uint32_t crc) {
  const auto& table = crc_table();
  const auto* p = static_cast<const uint8_t*>(data);
  crc = ~crc;
  for (size_t i = 0; i < bytes; ++i) crc = table[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

TorchZipArchive::TorchZipArchive(const std::string& path)
    : file_(path), name_(path), data_(file_.data()), size_(file_.size()) {
  parse();
}

TorchZipArchive::TorchZipArchive(std::string_view bytes, const std::string& name)
    : name_(name), data_(reinterpret_cast<const uint8_t*>(bytes.data())), size_(bytes.size()) {
  parse();
}

void TorchZipArchive::parse() {
  const std::string& path = name_;
  const Cursor c(data_, size_, path);
  // A legacy torch.save file (PyTorch < 1.6, or _use_new_zipfile_serialization=False) is a
  // sequence of pickles starting with PROTO (0x80).
  CHECK(!(size_ >= 1 && data_[0] == 0x80),
        "'{}' is a legacy (non-zip) torch.save file: it starts with a pickle, not a zip archive. "
        "Re-save it in the zip format with PyTorch >= 1.6: python -c \"import torch; "
        "torch.save(torch.load('{}', map_location='cpu'), '{}')\"",
        path, path, path);
  // Starts like a zip archive ("PK\3\4", or a prefix of it): then a missing end is truncation.
  const bool zip_magic =
      size_ == 0 || std::memcmp(data_, "PK\3\4", std::min<uint64_t>(size_, 4)) == 0;
  CHECK(size_ >= kEndBytes,
        "'{}' is {}: {} bytes, too small for a zip archive (torch.save writes a zip archive)", path,
        zip_magic ? "truncated" : "not a torch.save checkpoint", size_);

  // End of central directory: the last "PK\5\6" whose comment runs exactly to the end of file.
  uint64_t end_pos = UINT64_MAX;
  const uint64_t lowest = size_ - kEndBytes > kMaxComment ? size_ - kEndBytes - kMaxComment : 0;
  for (uint64_t pos = size_ - kEndBytes + 1; pos-- > lowest;) {
    if (c.u32(pos, "end of central directory") == kEndSig &&
        pos + kEndBytes + c.u16(pos + 20, "comment length") == size_) {
      end_pos = pos;
      break;
    }
  }
  CHECK(end_pos != UINT64_MAX,
        "'{}' is {}: no zip end-of-central-directory record in its last {} bytes (was the copy "
        "cut short? torch.save writes a zip archive)",
        path, zip_magic ? "truncated or corrupt" : "not a torch.save zip archive", size_ - lowest);
  const uint16_t disk = c.u16(end_pos + 4, "disk number");
  const uint16_t cd_disk = c.u16(end_pos + 6, "central directory disk");
  uint64_t count = c.u16(end_pos + 10, "entry count");
  uint64_t cd_size = c.u32(end_pos + 12, "central directory size");
  uint64_t cd_offset = c.u32(end_pos + 16, "central directory offset");
  CHECK(disk == 0 || disk == 0xFFFF, "'{}': multi-disk zip archives are not supported", path);
  (void)cd_disk;

  // ZIP64: a locator right before the end record points at the ZIP64 end record, whose 64-bit
  // fields replace the (then saturated) 16/32-bit ones.
  if (end_pos >= kZip64LocatorBytes &&
      c.u32(end_pos - kZip64LocatorBytes, "ZIP64 locator") == kZip64LocatorSig) {
    const uint64_t rec = c.u64(end_pos - kZip64LocatorBytes + 8, "ZIP64 end record offset");
    CHECK(
        rec <= end_pos - kZip64LocatorBytes && end_pos - kZip64LocatorBytes - rec >= kZip64EndBytes,
        "'{}' is corrupt: the ZIP64 end record offset {} is not before its locator at byte {}",
        path, rec, end_pos - kZip64LocatorBytes);
    CHECK(c.u32(rec, "ZIP64 end record") == kZip64EndSig,
          "'{}' is corrupt: no ZIP64 end-of-central-directory signature at byte {}", path, rec);
    count = c.u64(rec + 32, "ZIP64 entry count");
    cd_size = c.u64(rec + 40, "ZIP64 central directory size");
    cd_offset = c.u64(rec + 48, "ZIP64 central directory offset");
  } else {
    CHECK(count != 0xFFFF && cd_size != 0xFFFFFFFFu && cd_offset != 0xFFFFFFFFu,
          "'{}' is corrupt: the end record says ZIP64 but there is no ZIP64 locator before it",
          path);
  }
  CHECK(cd_offset <= end_pos && cd_size <= end_pos - cd_offset,
        "'{}' is truncated or corrupt: the central directory (byte {}, {} bytes) does not end "
        "before the end record at byte {}",
        path, cd_offset, cd_size, end_pos);
  CHECK(count <= kMaxEntries && count <= cd_size / kCentralBytes,
        "'{}' is corrupt: {} entries cannot fit a {}-byte central directory", path, count, cd_size);
  CHECK(count > 0, "'{}' is an empty zip archive, not a torch.save checkpoint", path);

  const Cursor cd(data_ + cd_offset, cd_size, path);  // entries must stay within the directory
  uint64_t pos = 0;
  for (uint64_t i = 0; i < count; ++i) {
    CHECK(cd.u32(pos, "central directory entry") == kCentralSig,
          "'{}' is corrupt: central directory entry {} (byte {}) has a bad signature", path, i,
          cd_offset + pos);
    const uint16_t flags = cd.u16(pos + 8, "entry flags");
    const uint16_t method = cd.u16(pos + 10, "compression method");
    const uint32_t crc = cd.u32(pos + 16, "CRC-32");
    uint64_t csize = cd.u32(pos + 20, "compressed size");
    uint64_t usize = cd.u32(pos + 24, "size");
    const uint16_t name_len = cd.u16(pos + 28, "name length");
    const uint16_t extra_len = cd.u16(pos + 30, "extra field length");
    const uint16_t comment_len = cd.u16(pos + 32, "comment length");
    uint64_t local = cd.u32(pos + 42, "local header offset");
    const std::string name = cd.str(pos + kCentralBytes, name_len, "entry name");
    // ZIP64 extra field (id 1): 64-bit values for exactly the fields saturated above, in order.
    const uint64_t extra = pos + kCentralBytes + name_len;
    for (uint64_t e = 0; e + 4 <= extra_len;) {
      const uint16_t id = cd.u16(extra + e, "extra field id");
      const uint16_t len = cd.u16(extra + e + 2, "extra field length");
      CHECK(e + 4 + len <= extra_len,
            "'{}' is corrupt: an extra field of entry '{}' runs past the entry's extra data", path,
            name);
      if (id == 1) {
        uint64_t at = extra + e + 4, left = len;
        for (uint64_t* field : {&usize, &csize, &local}) {
          if (*field != 0xFFFFFFFFu) continue;
          CHECK(left >= 8, "'{}' is corrupt: entry '{}' has a short ZIP64 extra field", path, name);
          *field = cd.u64(at, "ZIP64 extra field");
          at += 8;
          left -= 8;
        }
      }
      e += 4 + len;
    }
    pos += kCentralBytes + name_len + extra_len + comment_len;
    CHECK(pos <= cd_size,
          "'{}' is corrupt: central directory entry '{}' runs past the directory's {} bytes", path,
          name, cd_size);
    CHECK(!(flags & 1), "'{}': entry '{}' is encrypted; torch.save never encrypts", path, name);
    CHECK(usize != 0xFFFFFFFFu && csize != 0xFFFFFFFFu && local != 0xFFFFFFFFu,
          "'{}' is corrupt: entry '{}' has saturated sizes but no ZIP64 extra field", path, name);

    // Local header: its own name and extra lengths place the data.
    CHECK(c.u32(local, "local header") == kLocalHeaderSig,
          "'{}' is corrupt: entry '{}' says its local header is at byte {}, but there is no "
          "local header signature there",
          path, name, local);
    const uint64_t lname = c.u16(local + 26, "local name length");
    const uint64_t lextra = c.u16(local + 28, "local extra length");
    CHECK(c.str(local + kLocalBytes, lname, "local entry name") == name,
          "'{}' is corrupt: the local header at byte {} names a different entry than '{}'", path,
          local, name);
    const uint64_t start = local + kLocalBytes + lname + lextra;  // no overflow: local < size_
    CHECK(start <= size_ && csize <= size_ - start,
          "'{}' is truncated: entry '{}' (byte {}, {} bytes) ends past the end of the file ({} "
          "bytes)",
          path, name, start, csize, size_);
    CHECK(method != 0 || csize == usize,
          "'{}' is corrupt: STORED entry '{}' has stored size {} but size {}", path, name, csize,
          usize);

    // Every entry sits in one top folder.
    const size_t slash = name.find('/');
    CHECK(slash != std::string::npos && slash > 0,
          "'{}': entry '{}' is not inside a top folder; a torch.save archive keeps every entry "
          "under one folder such as 'archive/'",
          path, name);
    const std::string top = name.substr(0, slash);
    if (top_.empty()) top_ = top;
    CHECK(top == top_,
          "'{}': entries sit under two top folders ('{}/' and '{}/'); a torch.save archive has one",
          path, top_, top);
    TorchZipEntry entry{name, start, method == 0 ? usize : csize, method, crc};
    const bool fresh = entries_.emplace(name.substr(slash + 1), std::move(entry)).second;
    CHECK(fresh, "'{}' is corrupt: entry '{}' appears twice", path, name);
  }
  CHECK(entries_.count("data.pkl"),
        "'{}' is a zip archive but not a torch.save checkpoint: there is no '{}/data.pkl'", path,
        top_);
  // Byte order: entry present in newer archives; absent means little-endian (older writers).
  if (entries_.count("byteorder")) {
    const auto b = read("byteorder");
    const std::string order(reinterpret_cast<const char*>(b.data()), b.size());
    CHECK(order == "little",
          "'{}': storages are stored '{}'-endian; only little-endian checkpoints are supported "
          "(re-save it on a little-endian machine)",
          path, order);
  }
}

const TorchZipEntry& TorchZipArchive::entry(const std::string& relative_name) const {
  auto it = entries_.find(relative_name);
  CHECK(it != entries_.end(), "'{}': the archive has no entry '{}/{}' ({} entries)", name_, top_,
        relative_name, entries_.size());
  return it->second;
}

uint64_t TorchZipArchive::entry_size(const std::string& relative_name) const {
  return entry(relative_name).size;
}

std::span<const uint8_t> TorchZipArchive::read(const std::string& relative_name,
                                               bool verify_crc) const {
  const TorchZipEntry& e = entry(relative_name);
  CHECK(e.method == 0,
        "'{}': entry '{}' is compressed (zip method {}, {}); torch.save writes uncompressed "
        "(STORED) entries. Was the archive re-zipped? Re-save it with torch.save, or re-zip with "
        "`zip -0`",
        name_, e.name, e.method, method_name(e.method));
  const std::span<const uint8_t> bytes(data_ + e.data_offset, static_cast<size_t>(e.size));
  if (verify_crc) {
    const uint32_t crc = zip_crc32(bytes.data(), bytes.size());
    CHECK(crc == e.crc32,
          "'{}' is corrupt: entry '{}' has CRC-32 {:08x} but the directory says {:08x}", name_,
          e.name, crc, e.crc32);
  }
  return bytes;
}

}  // namespace nanogpt
