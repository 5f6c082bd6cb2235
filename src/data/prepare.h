// run_prepare: text -> token files, the library behind `nanogpt prepare`. It streams: documents are
// read in blocks (document_reader.h, block_reader.h), encoded on all threads in order
// (block_pipeline.h; output identical for any thread count and block size), and the tokens written
// as they come (token_split_writer.h), so peak memory is bounded by --memory_budget
// (prepare_plan.h) plus the tokenizer's tables, never by the corpus.
//
// char: the vocab is the sorted set of characters of the whole corpus, found by a first pass over
//   the input; the corpus is the documents concatenated in input order, with a '\n' added after a
//   document that does not end with one (and is not the last).
// gpt2: each document is encoded alone; format nanogpt appends EOT (50256) after each document
//   (nanoGPT's openwebtext recipe), format llmc puts EOT before each (llm.c's shards).
// Split (both): the first int(n * (1 - val_fraction)) tokens of the n written -> train, the rest ->
//   val. n is known only at the end: all tokens stream into one file, whose tail is then moved
//   into val.bin (format llmc: headered shards; past 2^31-1 tokens or shard_tokens, several).
// Outputs appear atomically (prepare_output.h): meta.json last, nothing complete-looking if killed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/prepare_config.h"
#include "data/prepare_output.h"

namespace nanogpt {

struct PrepareReport {
  std::string tokenizer;  // "char" | "gpt2"
  std::string format;     // "nanogpt" | "llmc"
  int vocab_size = 0;
  int64_t files = 0;
  int64_t documents = 0;
  int64_t input_bytes = 0;  // bytes of text encoded (after decompression and tag stripping)
  int64_t train_tokens = 0;
  int64_t val_tokens = 0;
  std::string train_path;                // train.bin, or the first of several train shards
  std::string val_path;                  // empty if val_fraction gave 0 tokens (no file written)
  std::vector<std::string> train_files;  // every train file (one unless llm.c shards)
  std::vector<std::string> val_files;
  std::string meta_path;
  std::vector<std::string> skipped;    // files found in directories and not read
  std::vector<std::string> leftovers;  // what an interrupted prepare had left in out_dir
  std::string plan;                    // PreparePlan::describe()
  int threads = 1;
  double seconds = 0.0;

  // Human-readable lines for the CLI (paths, token counts, vocab size, speed).
  std::string summary() const;
};

// For tests: a block size other than the plan's (tiny ones cut documents many times) and a hook
// called at each stage of the output (prepare_output.h).
struct PrepareOverrides {
  size_t block_bytes = 0;  // 0: from the memory plan
  StageHook stage_hook = nullptr;
};

// Throws nanogpt::Error (naming the file/key) on bad config, unreadable input or unwritable output;
// then the partial outputs are removed and what out_dir held before is untouched.
PrepareReport run_prepare(const PrepareConfig& config, const PrepareOverrides& overrides = {});

}  // namespace nanogpt
