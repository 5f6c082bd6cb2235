// The work prepare's pipeline does on each block (block_pipeline.h), per tokenizer: the char
// tokenizer's first pass (collecting the corpus's characters) and its encoding pass, and GPT-2
// encoding with EOT placed per document. Each keeps per-worker state (word caches, character
// sets, scratch) sized by the PreparePlan; long texts are encoded in slices of kEncodeSliceBytes.
#pragma once

#include <memory>
#include <vector>

#include "data/block_pipeline.h"
#include "data/prepare_plan.h"
#include "tokenizer/char_tokenizer.h"
#include "tokenizer/gpt2_tokenizer.h"

namespace nanogpt {

// Char pass 1: the set of characters of every block; invalid UTF-8 is an error naming the
// document and the byte offset in it.
class CharSetCollector {
 public:
  explicit CharSetCollector(int threads) : sets_(static_cast<size_t>(threads)) {}
  BlockWork work();
  // The union of what every worker saw.
  CodePointSet merged() const;

 private:
  std::vector<CodePointSet> sets_;
};

// Char pass 2: the block's text (documents and separators) as ids of `tokenizer`.
BlockWork char_encode_work(const CharTokenizer& tokenizer);

// GPT-2: each document part encoded alone (a document cut across blocks is cut where encoding the
// pieces apart is exact), EOT before each document (eot_first, llm.c) or after each (nanoGPT).
class Gpt2BlockEncoder {
 public:
  Gpt2BlockEncoder(const Gpt2Tokenizer& tokenizer, const PreparePlan& plan, bool eot_first);
  BlockWork work();

 private:
  const Gpt2Tokenizer& tokenizer_;
  bool eot_first_;
  std::vector<std::unique_ptr<Gpt2Tokenizer::Session>> sessions_;  // one per worker
  std::vector<std::vector<TokenId>> scratch_;
};

}  // namespace nanogpt
