// PrepareConfig: the keys of `nanogpt prepare` (text -> train.bin, val.bin, meta.json). Each key is
// declared once in visit() (parsing, --help, printing).
#pragma once

#include <cstdint>
#include <string>

namespace nanogpt {

struct PrepareConfig {
  std::string tokenizer = "char";
  std::string input = "";
  std::string out_dir = "";
  double val_fraction = 0.1;
  std::string format = "nanogpt";
  std::string vocab_dir;  // empty: the GPT-2 vocabulary built into the binary
  int threads = 0;
  std::string memory_budget = "1G";
  int64_t shard_tokens = 0;
  bool strip_pos_tags = false;
  bool progress = true;

  template <typename Visitor>
  void visit(Visitor&& v) {
    v("tokenizer", tokenizer, "'char' (vocab = the corpus's characters) or 'gpt2' (BPE)");
    v("input", input,
      "comma-separated text files, .jsonl files ({\"text\": ...} per line), gzip of either "
      "(.txt.gz, .jsonl.gz) and directories");
    v("out_dir", out_dir, "where train.bin, val.bin and meta.json are written (created)");
    v("val_fraction", val_fraction, "last fraction of the tokens written to val.bin");
    v("format", format,
      "'nanogpt' (headerless uint16; gpt2: EOT after each document) or 'llmc' (llm.c shards; "
      "gpt2: EOT before each document)");
    v("vocab_dir", vocab_dir,
      "directory with GPT-2's encoder.json and vocab.bpe (gpt2 only); empty = built in");
    v("threads", threads, "encoding threads; 0 = all cores");
    v("memory_budget", memory_budget,
      "peak memory for text and tokens in flight, whatever the corpus size (bytes, or e.g. 64M, "
      "1G); the tokenizer's tables come on top");
    v("shard_tokens", shard_tokens,
      "llmc: at most this many tokens per file (train_000000.bin, ...); 0 = one train.bin and "
      "one val.bin, cut into such shards only past the 2147483647 tokens a header can count");
    v("strip_pos_tags", strip_pos_tags,
      "Brown corpus: turn word/tag tokens into words and read only its text files (ca01...)");
    v("progress", progress,
      "show bytes done, tokens, MB/s and ETA on stderr when it is a terminal");
  }

  // Throws nanogpt::Error naming the key and what to change.
  void validate() const;
};

}  // namespace nanogpt
