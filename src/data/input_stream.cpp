// InputStream over zlib's gzFile (transparent for plain files).
#include "data/input_stream.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "core/check.h"

namespace nanogpt {

namespace {

constexpr unsigned kZlibBufferBytes = 1u << 18;

}  // namespace

bool is_gzip_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char magic[2] = {0, 0};
  in.read(reinterpret_cast<char*>(magic), 2);
  return in.gcount() == 2 && magic[0] == 0x1F && magic[1] == 0x8B;
}

InputStream::InputStream(const std::filesystem::path& path) : path_(path.string()) {
  gzip_ = is_gzip_file(path);
  gzFile f = gzopen(path_.c_str(), "rb");
  CHECK(f != nullptr, "cannot open input file '{}' for reading: {}", path_,
        errno != 0 ? std::strerror(errno) : "out of memory");
  gzbuffer(f, kZlibBufferBytes);
  file_ = f;
}

InputStream::~InputStream() {
  if (file_ != nullptr) gzclose_r(static_cast<gzFile>(file_));
}

size_t InputStream::read(std::string& out, size_t max_bytes) {
  auto* f = static_cast<gzFile>(file_);
  const size_t old = out.size();
  // (zlib reads at most UINT_MAX bytes per call.)
  const auto want = static_cast<unsigned>(std::min<size_t>(max_bytes, 1u << 30));
  out.resize(old + want);
  const int got = gzread(f, out.data() + old, want);
  if (got < 0) {
    int code = 0;
    const char* message = gzerror(f, &code);
    out.resize(old);
    if (code == Z_ERRNO) {
      fail("error reading input file '{}': {}", path_, std::strerror(errno));
    }
    fail(
        "input file '{}' is not valid gzip data ({}); is it truncated or corrupt? (gunzip -t "
        "tells)",
        path_, message);
  }
  out.resize(old + static_cast<size_t>(got));
  if (got == 0 && gzip_) {
    // zlib reports a cut-off stream at its end as an error only through gzerror.
    int code = 0;
    gzerror(f, &code);
    CHECK(code == Z_OK || code == Z_STREAM_END,
          "input file '{}' is not valid gzip data (it ends in the middle of the stream); is it "
          "truncated? (gunzip -t tells)",
          path_);
  }
  return static_cast<size_t>(got);
}

int64_t InputStream::file_offset() const {
  return static_cast<int64_t>(gzoffset(static_cast<gzFile>(file_)));
}

}  // namespace nanogpt
