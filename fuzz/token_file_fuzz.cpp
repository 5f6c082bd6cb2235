// Fuzzes token files (data/token_file): nanoGPT's headerless uint16 .bin and llm.c shards
// (1024-byte int32 header: magic, version, token count). Byte 0 of the input picks the open options
// (preload | mmap, format auto | nanogpt | llmc, vocab_size limit, min_tokens); the rest is the
// file. A file that opens is then read through a DataLoader (random or sequential batches).
#include <algorithm>
#include <vector>

#include "data/loader.h"
#include "data/token_file.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace nanogpt;
  using namespace nanogpt::fuzz;
  if (size < 1) return 0;
  const uint8_t b = data[0];
  constexpr int kVocabs[4] = {0, 65, 256, 50257};
  TokenFileOptions options;
  options.mode = (b & 1) ? DataMode::kMmap : DataMode::kPreload;
  options.format = static_cast<TokenFormat>((b >> 1) % 3);
  options.vocab_size = kVocabs[(b >> 3) & 3];
  options.min_tokens = (b >> 5) & 7;
  const std::string path = write_scratch_file("tokens.bin", as_text(data + 1, size - 1));
  const int64_t file_bytes = static_cast<int64_t>(size - 1);

  TokenFile file;
  if (!accepts([&] { file = TokenFile(path, options); })) return 0;
  // What opened is consistent with the file and the options.
  FUZZ_ASSERT(file.format() != TokenFormat::kAuto, "format not resolved");
  const int64_t header = file.format() == TokenFormat::kLlmc ? kLlmcHeaderBytes : 0;
  FUZZ_ASSERT(header + 2 * file.size() == file_bytes, "size %lld vs %lld file bytes",
              static_cast<long long>(file.size()), static_cast<long long>(file_bytes));
  FUZZ_ASSERT(file.size() >= options.min_tokens, "fewer than min_tokens");
  uint16_t m = 0;
  for (int64_t i = 0; i < file.size(); ++i) m = std::max(m, file.tokens()[i]);
  FUZZ_ASSERT(m == file.max_token(), "max_token %u vs %u", file.max_token(), m);
  FUZZ_ASSERT(options.vocab_size == 0 || m < options.vocab_size, "token beyond vocab accepted");
  file.prefetch(0, file.size());

  // The same file through a loader: a few batches, every value a token of the file.
  LoaderConfig lc;
  lc.data_mode = (b & 1) ? "mmap" : "preload";
  lc.sampling = (b & 0x80) ? "sequential" : "random";
  lc.format = token_format_name(options.format);
  lc.vocab_size = options.vocab_size;
  lc.batch_size = 2;
  lc.block_size = 1 + (b >> 4) % 4;
  accepts([&] {
    DataLoader loader(path, lc);
    std::vector<int32_t> x(2 * lc.block_size), y(2 * lc.block_size);
    for (int k = 0; k < 3; ++k) {
      loader.next_batch(x.data(), y.data());
      for (size_t i = 0; i < x.size(); ++i) {
        FUZZ_ASSERT(x[i] >= 0 && x[i] <= m && y[i] >= 0 && y[i] <= m, "batch value out of range");
      }
    }
    LoaderState s = loader.state();
    loader.reset();
    loader.skip(3);
    FUZZ_ASSERT(loader.state() == s, "skip(3) after reset differs from 3 batches");
  });
  return 0;
}
