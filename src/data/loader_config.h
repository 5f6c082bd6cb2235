// LoaderConfig: how a DataLoader reads its token file(s) -- storage mode, sampling order, batch
// shape (B, T), seed and rank. Each key is declared once in visit() (parsing, --help, saving).
#pragma once

#include <cstdint>
#include <string>

namespace nanogpt {

struct LoaderConfig {
  std::string data_mode = "auto";
  std::string sampling = "random";
  int64_t batch_size = 12;    // B
  int64_t block_size = 1024;  // T
  int64_t seed = 1337;
  int rank = 0;
  int world_size = 1;
  std::string format = "auto";
  int vocab_size = 0;

  template <typename Visitor>
  void visit(Visitor&& v) {
    v("data_mode", data_mode,
      "'auto' (preload up to 1 GiB of token files and a quarter of the memory available, else "
      "mmap), 'preload' (read token files into RAM) or 'mmap' (map read-only; RSS stays bounded)");
    v("sampling", sampling,
      "'random' (nanoGPT: B random offsets per batch) or 'sequential' (llm.c: contiguous B*T)");
    v("batch_size", batch_size, "sequences per batch B");
    v("block_size", block_size, "tokens per sequence T");
    v("seed", seed, "seed of the random offsets (each rank derives its own stream from it)");
    v("rank", rank, "this process's rank in 0..world_size-1 (each rank reads a disjoint stream)");
    v("world_size", world_size, "number of data-parallel processes");
    v("format", format, "token file format: 'auto' (by magic), 'nanogpt' (raw .bin) or 'llmc'");
    v("vocab_size", vocab_size, "if > 0, every token id must be below it (checked at open)");
  }

  // Throws nanogpt::Error naming the key and what to change.
  void validate() const;
};

}  // namespace nanogpt
