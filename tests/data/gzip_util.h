// write_gzip for the data tests: bytes written gzip-compressed by zlib's gzip writer (as `gzip`
// would), for the inputs prepare reads through zlib.
#pragma once

#include <gtest/gtest.h>
#include <zlib.h>

#include <string>

namespace nanogpt::testing {

inline void write_gzip(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())),
            static_cast<int>(bytes.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
}

}  // namespace nanogpt::testing
