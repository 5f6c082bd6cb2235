// Writes a synthetic corpus for prepare's benchmarks (SyntheticText: English-like random text whose
// distinct words never stop coming, so GPT-2's word cache cannot hold them). Plain main().
// Usage: bench_make_corpus --out PATH --bytes SIZE [--seed N] [--jsonl]
//   SIZE: bytes or with a suffix (200M, 10G; binary units). --jsonl: {"text": ...} per line.
#include <fmt/format.h>

#include <string>

#include "core/byte_size.h"
#include "core/check.h"
#include "core/timer.h"
#include "data/synthetic_text.h"

namespace {

int run(int argc, char** argv) {
  std::string out;
  int64_t bytes = 0;
  uint64_t seed = 1;
  bool jsonl = false;
  for (int i = 1; i < argc; ++i) {
    const std::string key = argv[i];
    if (key == "--jsonl") {
      jsonl = true;
      continue;
    }
    CHECK(i + 1 < argc, "{} needs a value (usage at the top of bench/make_corpus.cpp)", key);
    const std::string value = argv[++i];
    if (key == "--out") {
      out = value;
    } else if (key == "--bytes") {
      bytes = nanogpt::parse_byte_size(value, "--bytes");
    } else if (key == "--seed") {
      seed = std::stoull(value);
    } else {
      nanogpt::fail("unknown option {}; expected --out, --bytes, --seed, --jsonl", key);
    }
  }
  CHECK(!out.empty() && bytes > 0, "give --out PATH and --bytes SIZE (e.g. --bytes 10G)");
  nanogpt::Timer timer;
  nanogpt::write_synthetic_corpus(out, bytes, seed, jsonl);
  fmt::print("wrote {} ({} bytes, seed {}) in {:.1f} s\n", out, bytes, seed, timer.seconds());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
