// SyntheticText: endless, deterministic English-like text from a seed, for prepare's benchmarks and
// memory tests. Words are drawn Zipf-like (P(rank k) ~ 1/k) from 4 million generated words, plus a
// share of fresh random words and numbers, so common words repeat as in real text while distinct
// words never stop coming: no word cache can hold them all, and memory that grows with the corpus
// shows. Sentences, commas, paragraphs (blank lines). Only ASCII letters, digits, " ,.?!\n".
#pragma once

#include <cstdint>
#include <string>

namespace nanogpt {

class SyntheticText {
 public:
  explicit SyntheticText(uint64_t seed);
  // Appends whole sentences to out until it has grown by at least `bytes`.
  void append(std::string& out, size_t bytes);

 private:
  uint64_t next();
  void append_word(std::string& out, bool capital);
  void append_sentence(std::string& out);

  uint64_t seed_;
  uint64_t state_;
  int sentences_left_in_paragraph_ = 0;
};

// Writes `bytes` bytes (cut to exactly that) of SyntheticText(seed) to path: plain text, or with
// jsonl one {"text": ...} document of 1-30 KB per line. Throws nanogpt::Error naming the path.
void write_synthetic_corpus(const std::string& path, int64_t bytes, uint64_t seed, bool jsonl);

}  // namespace nanogpt
