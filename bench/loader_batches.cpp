// W6: random batches (B 64, T 512) from a 1 GiB token file, preload vs mmap, in µs/batch.
// The file is generated once next to this executable (or in $NANOGPT_BENCH_DIR) and reused.
// mmap "cold" evicts the file from the page cache before each repetition with
// posix_fadvise(POSIX_FADV_DONTNEED) (per file, no root, does not disturb other processes; we do
// not write /proc/sys/vm/drop_caches on a shared machine) and maps it afresh; mincore() reports
// how much of the file was resident, so the figure says what it measured.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/rng.h"
#include "core/timer.h"
#include "data/loader.h"
#include "data/token_writer.h"

namespace {

using namespace nanogpt;

constexpr int64_t kTokens = int64_t{1} << 29;  // 1 GiB of uint16
constexpr int64_t kB = 64, kT = 512;

std::string bench_file() {
  const char* dir = std::getenv("NANOGPT_BENCH_DIR");
  std::filesystem::path base = dir ? std::filesystem::path(dir)
                                   : std::filesystem::read_symlink("/proc/self/exe").parent_path();
  return (base / "loader_bench_1gib.bin").string();
}

void ensure_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::file_size(path, ec) == static_cast<uintmax_t>(kTokens * 2)) return;
  std::printf("generating %s (1 GiB of random GPT-2 token ids)...\n", path.c_str());
  std::vector<uint16_t> tokens(kTokens);
  Rng rng(42);
  for (auto& t : tokens) t = static_cast<uint16_t>(rng.uniform_int(50257));
  write_nanogpt_tokens(path, tokens);
}

// Fraction of the file's pages in the page cache.
double resident_fraction(const std::string& path) {
  MappedFile map(path);
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> vec((map.size() + page - 1) / page);
  if (mincore(const_cast<uint8_t*>(map.data()), map.size(), vec.data()) != 0) return -1;
  size_t n = 0;
  for (unsigned char v : vec) n += v & 1;
  return static_cast<double>(n) / static_cast<double>(vec.size());
}

void evict(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) return;
  fdatasync(fd);
  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  close(fd);
}

// Reads the whole file once so every page is in the page cache.
void warm(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) return;
  std::vector<char> chunk(16 << 20);
  while (read(fd, chunk.data(), chunk.size()) > 0) {
  }
  close(fd);
}

// Median µs/batch over `reps` runs of `batches` batches. cache: evict the file from / read it into
// the page cache before each rep; fresh: a new loader (new mapping, new seed) per rep, else one
// loader for all reps; touch_all: the loader's vocab check maps every page at open.
enum class Cache { kCold, kWarm, kAsIs };

struct Figure {
  double median;
  double min;
};

Figure run(const std::string& path, const std::string& mode, int reps, int batches, Cache cache,
           bool fresh, bool touch_all, double* resident_before) {
  LoaderConfig c;
  if (touch_all) c.vocab_size = 50257;  // the vocab check at open reads (maps) every page
  c.data_mode = mode;
  c.batch_size = kB;
  c.block_size = kT;
  std::vector<int32_t> x(kB * kT), y(kB * kT);
  std::vector<double> per_batch;
  std::optional<DataLoader> loader;
  int64_t checksum = 0;
  for (int r = 0; r < reps; ++r) {
    if (cache == Cache::kCold) evict(path);
    if (cache == Cache::kWarm) warm(path);
    if (resident_before && r == 0) *resident_before = resident_fraction(path);
    if (fresh || !loader) {
      c.seed = 1000 + r;  // new offsets each rep: warm reps do not find their pages mapped
      loader.emplace(path, c);
    }
    Timer t;
    for (int k = 0; k < batches; ++k) {
      loader->next_batch(x.data(), y.data());
      checksum += x[k % (kB * kT)];
    }
    per_batch.push_back(t.seconds() * 1e6 / batches);
  }
  std::sort(per_batch.begin(), per_batch.end());
  if (checksum == 42) std::printf(" ");  // keeps the copies observable
  return {per_batch[per_batch.size() / 2], per_batch.front()};
}

}  // namespace

int main() {
  const std::string path = bench_file();
  ensure_file(path);
  std::printf("W6 random batches B=%lld T=%lld from %s (%.2f GiB)\n", static_cast<long long>(kB),
              static_cast<long long>(kT), path.c_str(), kTokens * 2.0 / (1 << 30));

  Timer open_timer;
  {
    DataLoader warmup(path,
                      LoaderConfig{.data_mode = "preload", .batch_size = kB, .block_size = kT});
  }
  std::printf("preload open (read 1 GiB): %.0f ms\n", open_timer.ms());

  double res_cold = 0, res_warm = 0, res_touch = 0;
  const Figure preload = run(path, "preload", 9, 2000, Cache::kAsIs, false, false, nullptr);
  const Figure cold = run(path, "mmap", 5, 200, Cache::kCold, true, false, &res_cold);
  const Figure warm = run(path, "mmap", 5, 200, Cache::kWarm, true, false, &res_warm);
  const Figure hot = run(path, "mmap", 9, 2000, Cache::kWarm, false, true, &res_touch);

  std::printf("%-46s %12s %9s\n", "case (median of reps, min)", "us/batch", "min");
  std::printf("%-46s %12.1f %9.1f\n", "preload (tokens in our RAM buffer)", preload.median,
              preload.min);
  std::printf("%-46s %12.1f %9.1f   (%.0f%% of file cached before)\n",
              "mmap cold: page cache evicted, new mapping", cold.median, cold.min, 100 * res_cold);
  std::printf("%-46s %12.1f %9.1f   (%.0f%% of file cached before)\n",
              "mmap warm: file in page cache, new mapping", warm.median, warm.min, 100 * res_warm);
  std::printf("%-46s %12.1f %9.1f   (%.0f%% of file cached before)\n",
              "mmap hot: cached and every page mapped", hot.median, hot.min, 100 * res_touch);
  std::printf("mmap/preload (medians): cold %.1fx, warm %.1fx, hot %.1fx\n",
              cold.median / preload.median, warm.median / preload.median,
              hot.median / preload.median);
  return 0;
}
