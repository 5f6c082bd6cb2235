// CharTokenizer: nanoGPT's character-level tokenizer. The vocabulary is the sorted set of Unicode
// code points of a corpus (tinyshakespeare: 65); it is saved as meta.json in nanoGPT's meta.pkl
// shape: {"vocab_size": N, "itos": {"0": "\n", ...}, "stoi": {"\n": 0, ...}, "tokenizer": "char"}.
#pragma once

#include <filesystem>
#include <unordered_map>

#include "tokenizer/tokenizer.h"

namespace nanogpt {

// The set of code points of UTF-8 text collected piece by piece (prepare's first pass over a
// corpus it does not hold): a bitmap over U+0000..U+10FFFF (136 KiB); sets of several threads
// merge.
class CodePointSet {
 public:
  CodePointSet() : bits_((kCodePoints + 63) / 64) {}
  // Adds the characters of text. Returns text.size(), or the byte offset of the first invalid UTF-8
  // byte (the characters before it are added).
  size_t add(std::string_view text);
  void merge(const CodePointSet& other);
  size_t size() const;
  std::vector<char32_t> sorted() const;

 private:
  static constexpr size_t kCodePoints = 0x110000;
  std::vector<uint64_t> bits_;
};

class CharTokenizer : public Tokenizer {
 public:
  // Vocabulary of text (valid UTF-8; throws naming the byte offset of invalid UTF-8).
  static CharTokenizer build(std::string_view text);
  // From a sorted or unsorted list of distinct code points (index = id).
  explicit CharTokenizer(std::vector<char32_t> chars);

  // Reads a meta.json written by save_meta (or converted from nanoGPT's meta.pkl); validates it
  // and throws nanogpt::Error naming the file and the problem.
  static CharTokenizer load_meta(const std::filesystem::path& path);
  void save_meta(const std::filesystem::path& path) const;

  // Throws nanogpt::Error naming the character and its byte offset if it is not in the vocab.
  std::vector<TokenId> encode(std::string_view text) const override;
  std::string decode(std::span<const TokenId> ids) const override;
  int vocab_size() const override { return static_cast<int>(chars_.size()); }
  int eot_token() const override { return -1; }
  std::string name() const override { return "char"; }

  const std::vector<char32_t>& chars() const { return chars_; }

 private:
  std::vector<char32_t> chars_;                  // id -> code point
  TokenId ascii_[128];                           // code point < 128 -> id, or kNoId
  std::unordered_map<char32_t, TokenId> other_;  // code points >= 128 -> id
};

}  // namespace nanogpt
