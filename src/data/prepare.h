// run_prepare: text -> token files, the library behind `nanogpt prepare`. Reads the inputs
// (documents.h), encodes them with the char or GPT-2 tokenizer on all threads (output identical to
// one thread), splits train/val like nanoGPT and writes train.bin, val.bin and meta.json.
//
// char: the vocab is the sorted set of characters of the whole corpus; the corpus is the documents
//   concatenated in input order, with a '\n' added after a document that does not end with one.
// gpt2: each document is encoded alone; format nanogpt appends EOT (50256) after each document
//   (nanoGPT's openwebtext recipe), format llmc puts EOT before each (llm.c's shards).
// Split (both): the first int(n * (1 - val_fraction)) tokens -> train.bin, the rest -> val.bin
//   (format llmc: both written as llm.c shards with headers). All text is held in memory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/prepare_config.h"

namespace nanogpt {

struct PrepareReport {
  std::string tokenizer;  // "char" | "gpt2"
  std::string format;     // "nanogpt" | "llmc"
  int vocab_size = 0;
  int64_t files = 0;
  int64_t documents = 0;
  int64_t input_bytes = 0;  // bytes of text encoded (after tag stripping)
  int64_t train_tokens = 0;
  int64_t val_tokens = 0;
  std::string train_path;
  std::string val_path;  // empty if val_fraction gave 0 tokens (no file written)
  std::string meta_path;
  std::vector<std::string> skipped;  // files found in directories and not read
  int threads = 1;
  double seconds = 0.0;

  // Human-readable lines for the CLI (paths, token counts, vocab size, speed).
  std::string summary() const;
};

// Throws nanogpt::Error (naming the file/key) on bad config, unreadable input or unwritable output.
PrepareReport run_prepare(const PrepareConfig& config);

}  // namespace nanogpt
