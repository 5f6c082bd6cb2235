// The GPT-2 pre-tokenizer as the regex itself, run by PCRE2 (UTF + UCP, JIT when available). It is
// the reference the hand-written scanner (pretokenizer.h) is tested against. `\s` is spelled out as
// JavaScript's whitespace set so both follow the JavaScript encoders; \p{L} and \p{N} come from
// PCRE2's own Unicode tables (10.42: Unicode 14), so compare them only on characters assigned
// there.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

namespace nanogpt {

class Pcre2PreTokenizer {
 public:
  Pcre2PreTokenizer();  // compiles the pattern; throws nanogpt::Error on failure
  ~Pcre2PreTokenizer();
  Pcre2PreTokenizer(const Pcre2PreTokenizer&) = delete;
  Pcre2PreTokenizer& operator=(const Pcre2PreTokenizer&) = delete;

  // Pieces of text (must be valid UTF-8; throws nanogpt::Error naming the offset otherwise).
  // Safe to call from several threads at once.
  std::vector<std::string_view> split(std::string_view text) const;

  // The pattern as compiled.
  static const char* pattern();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace nanogpt
