// data_mode: 'auto' preloads small token files and maps large ones (over 1 GiB, or over a quarter
// of the memory available), explicit values stay as set, a bad value names the key; and a loader
// over a mapped file far larger than its reads keeps its RSS bounded: the vocabulary scan and the
// random batches drop the file's pages from RSS as they go (the page cache keeps them).
#include "data/data_mode.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "core/check.h"
#include "data/loader.h"
#include "temp_dir.h"

namespace nanogpt {
namespace {

using testing::TempDir;
constexpr int64_t kGiB = int64_t{1} << 30;

TEST(DataMode, AutoPreloadsSmallFilesAndMapsLargeOnes) {
  DataModeChoice c = resolve_data_mode("auto", 2'000'000, 16 * kGiB);
  EXPECT_EQ(c.mode, DataMode::kPreload);
  EXPECT_EQ(c.why.rfind("preload (auto: ", 0), 0u) << c.why;
  c = resolve_data_mode("auto", kAutoPreloadMaxBytes, 16 * kGiB);
  EXPECT_EQ(c.mode, DataMode::kPreload);
  c = resolve_data_mode("auto", kAutoPreloadMaxBytes + 1, 512 * kGiB);
  EXPECT_EQ(c.mode, DataMode::kMmap);
  EXPECT_NE(c.why.find("over the 1.0 GiB that auto preloads"), std::string::npos) << c.why;
  // Little memory available: even a small corpus is mapped.
  c = resolve_data_mode("auto", 300'000'000, kGiB);
  EXPECT_EQ(c.mode, DataMode::kMmap);
  EXPECT_NE(c.why.find("over a quarter of the 1.0 GiB of memory available"), std::string::npos)
      << c.why;
  c = resolve_data_mode("auto", 1'000'000, 0);  // /proc/meminfo unreadable
  EXPECT_EQ(c.mode, DataMode::kMmap);
}

TEST(DataMode, ExplicitValuesStayAndABadOneNamesTheKey) {
  EXPECT_EQ(resolve_data_mode("preload", 100 * kGiB, 0).mode, DataMode::kPreload);
  EXPECT_EQ(resolve_data_mode("preload", 100 * kGiB, 0).why, "preload (as set)");
  EXPECT_EQ(resolve_data_mode("mmap", 10, 16 * kGiB).mode, DataMode::kMmap);
  try {
    resolve_data_mode("ram", 10, 16 * kGiB);
    FAIL() << "no error for data_mode = 'ram'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("data_mode = 'ram': expected 'auto'"), std::string::npos)
        << e.what();
  }
  EXPECT_GT(memory_available_bytes(), 0);
}

int64_t rss_bytes() {
  std::ifstream in("/proc/self/statm");
  int64_t pages = 0, resident = 0;
  in >> pages >> resident;
  return resident * ::sysconf(_SC_PAGESIZE);
}

// A sparse 1.5 GiB token file (every token 0; no disk used): auto maps it, and the scan of every
// token at open plus 3000 random batches (each row maps up to 64 KiB: ~12 GiB of mappings without
// the releases) leave RSS within 600 MB of where it started.
TEST(DataMode, AMappedFileLargerThanItsReadsKeepsRssBounded) {
  TempDir dir;
  const std::string path = dir.file("train.bin");
  { std::ofstream(path, std::ios::binary); }
  std::filesystem::resize_file(path, 3 * static_cast<uintmax_t>(kGiB) / 2);
  const int64_t before = rss_bytes();
  LoaderConfig config;
  config.batch_size = 64;
  config.block_size = 256;
  config.vocab_size = 50;  // the scan reads every token
  DataLoader loader(path, config);
  EXPECT_EQ(loader.file(0).mode(), DataMode::kMmap);
  EXPECT_NE(loader.mode_description().find("mmap (auto: 1.5 GiB of token files"), std::string::npos)
      << loader.mode_description();
  const int64_t after_open = rss_bytes();
  EXPECT_LT(after_open - before, 600'000'000) << "after the scan at open";
  std::vector<int32_t> x(64 * 256), y(64 * 256);
  int64_t peak = after_open;
  for (int k = 0; k < 3000; ++k) {
    loader.next_batch(x.data(), y.data());
    if (k % 100 == 0) peak = std::max(peak, rss_bytes());
  }
  EXPECT_EQ(x[0], 0);
  EXPECT_LT(peak - before, 600'000'000) << "while reading random batches";
}

}  // namespace
}  // namespace nanogpt
