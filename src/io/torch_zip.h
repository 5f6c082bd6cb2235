// The zip archive that torch.save writes (PyTorch >= 1.6, "zipfile serialization"): every entry
// sits in one top folder (`archive/`, or the saved file's stem in older versions), STORED (not
// compressed) and 64-byte aligned: `<top>/data.pkl` (the pickled object), `<top>/data/<key>` (one
// raw little-endian storage per key), `<top>/version`, `<top>/byteorder` (newer), and a few others
// (`.format_version`, `.storage_alignment`, `.data/serialization_id`) that are kept but unused.
// TorchZipArchive owns reading that container: end of central directory (plain or ZIP64), the
// central directory, each entry's local header and ZIP64 extra field. It maps the file and hands
// out spans into the mapping; every offset and size is checked against the file size first. It
// knows nothing of pickles (io/torch_pickle.h) or checkpoints (io/torch_checkpoint.h).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>

#include "core/mapped_file.h"

namespace nanogpt {

struct TorchZipEntry {
  std::string name;          // full name in the archive, e.g. "archive/data/0"
  uint64_t data_offset = 0;  // first byte of the entry's data within the file
  uint64_t size = 0;         // bytes (uncompressed; equal to the stored size for STORED entries)
  uint16_t method = 0;       // 0 = STORED; anything else is refused when the entry is read
  uint32_t crc32 = 0;        // from the central directory
};

// zlib's CRC-32 (polynomial 0xEDB88320), the one zip uses; `crc` continues a previous value.
uint32_t zip_crc32(const void* data, size_t bytes, uint32_t crc = 0);

class TorchZipArchive {
 public:
  // Maps `path` and reads its directory. Throws nanogpt::Error naming the file on anything
  // malformed, and with a re-save hint on a legacy (pre-1.6, pickle-first) torch.save file.
  explicit TorchZipArchive(const std::string& path);
  // The same over bytes held by the caller (they must outlive the archive); `name` stands for the
  // path in errors.
  TorchZipArchive(std::string_view bytes, const std::string& name);

  const std::string& path() const { return name_; }
  // The top folder without its slash, e.g. "archive".
  const std::string& top_folder() const { return top_; }
  // Entries keyed by their name below the top folder ("data.pkl", "data/0", "version", ...).
  const std::map<std::string, TorchZipEntry>& entries() const { return entries_; }
  bool contains(const std::string& relative_name) const {
    return entries_.count(relative_name) > 0;
  }
  // The bytes of entry `relative_name` (below the top folder), inside the mapping. Throws naming
  // the file and entry when it is absent, compressed, or (verify_crc) its CRC-32 does not match.
  std::span<const uint8_t> read(const std::string& relative_name, bool verify_crc = false) const;
  // Size of an entry, throwing like read() when absent.
  uint64_t entry_size(const std::string& relative_name) const;

 private:
  void parse();
  const TorchZipEntry& entry(const std::string& relative_name) const;

  MappedFile file_;                // when constructed from a path
  std::string name_;               // the path, or the name given with the bytes
  const uint8_t* data_ = nullptr;  // the whole file: file_'s mapping or the caller's bytes
  uint64_t size_ = 0;
  std::string top_;
  std::map<std::string, TorchZipEntry> entries_;
};

}  // namespace nanogpt
