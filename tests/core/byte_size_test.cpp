// Tests of byte sizes in config keys: plain counts, binary suffixes, and the error for anything
// else.
#include "core/byte_size.h"

#include <gtest/gtest.h>

#include "core/check.h"

namespace nanogpt {
namespace {

TEST(ByteSize, PlainCountsAndSuffixes) {
  EXPECT_EQ(parse_byte_size("1073741824", "k"), 1073741824);
  EXPECT_EQ(parse_byte_size("64M", "k"), 64 << 20);
  EXPECT_EQ(parse_byte_size("64m", "k"), 64 << 20);
  EXPECT_EQ(parse_byte_size("64MB", "k"), 64 << 20);
  EXPECT_EQ(parse_byte_size("64MiB", "k"), 64 << 20);
  EXPECT_EQ(parse_byte_size("1G", "k"), int64_t{1} << 30);
  EXPECT_EQ(parse_byte_size("1.5G", "k"), int64_t{3} << 29);
  EXPECT_EQ(parse_byte_size("512K", "k"), 512 << 10);
  EXPECT_EQ(parse_byte_size("2T", "k"), int64_t{2} << 40);
  EXPECT_EQ(parse_byte_size("100B", "k"), 100);
}

TEST(ByteSize, ErrorsNameKeyAndValue) {
  for (const char* bad : {"", "abc", "64X", "M", "1.2.3G", "64 MiBs", "-5", "1e9"}) {
    try {
      parse_byte_size(bad, "memory_budget");
      FAIL() << "'" << bad << "' was accepted";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(std::string("memory_budget = '") + bad + "'"), std::string::npos) << what;
      EXPECT_NE(what.find("64M or 1G"), std::string::npos) << what;
    }
  }
}

TEST(ByteSize, Format) {
  EXPECT_EQ(format_byte_size(512), "512 B");
  EXPECT_EQ(format_byte_size(64 << 20), "64.0 MiB");
  EXPECT_EQ(format_byte_size(int64_t{3} << 29), "1.5 GiB");
}

}  // namespace
}  // namespace nanogpt
