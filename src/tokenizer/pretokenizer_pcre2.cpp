// PCRE2 implementation of the GPT-2 pre-tokenizer regex (the reference for the fast scanner).
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/pretokenizer_pcre2.h"

#include <pcre2.h>

#include "core/check.h"

namespace nanogpt {
namespace {

// JavaScript's \s: WhiteSpace + LineTerminator (includes U+FEFF, excludes U+0085).
#define NANOGPT_JS_SPACE                                                                        \
  "\\t\\n\\x{0B}\\f\\r \\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}" \
  "\\x{3000}\\x{FEFF}"

constexpr const char* kPattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^" NANOGPT_JS_SPACE
    "\\p{L}\\p{N}]+|[" NANOGPT_JS_SPACE "]+(?![^" NANOGPT_JS_SPACE "])|[" NANOGPT_JS_SPACE "]+";

#undef NANOGPT_JS_SPACE

std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  pcre2_get_error_message(code, buf, sizeof(buf));
  return reinterpret_cast<const char*>(buf);
}

}  // namespace

struct Pcre2PreTokenizer::Impl {
  pcre2_code* code = nullptr;
  ~Impl() { pcre2_code_free(code); }
};

Pcre2PreTokenizer::Pcre2PreTokenizer() : impl_(std::make_unique<Impl>()) {
  int err = 0;
  PCRE2_SIZE err_offset = 0;
  impl_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(kPattern), PCRE2_ZERO_TERMINATED,
                              PCRE2_UTF | PCRE2_UCP, &err, &err_offset, nullptr);
  CHECK(impl_->code != nullptr, "PCRE2 could not compile the GPT-2 pattern at offset {}: {}",
        err_offset, pcre2_message(err));
  pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE);  // optional: falls back to the interpreter
}

Pcre2PreTokenizer::~Pcre2PreTokenizer() = default;

const char* Pcre2PreTokenizer::pattern() { return kPattern; }

std::vector<std::string_view> Pcre2PreTokenizer::split(std::string_view text) const {
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> md(
      pcre2_match_data_create_from_pattern(impl_->code, nullptr), &pcre2_match_data_free);
  std::vector<std::string_view> pieces;
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0;
  uint32_t options = 0;
  while (pos < text.size()) {
    const int rc = pcre2_match(impl_->code, subject, text.size(), pos, options, md.get(), nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    CHECK(rc >= 0, "PCRE2 pre-tokenizer failed at byte {} of {}: {} (the text must be valid UTF-8)",
          pos, text.size(), pcre2_message(rc));
    options = PCRE2_NO_UTF_CHECK;  // checked once on the first call
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.get());
    CHECK(ov[0] == pos,
          "PCRE2 pre-tokenizer skipped bytes {}..{}; the pattern must match everywhere", pos,
          ov[0]);
    pieces.push_back(text.substr(ov[0], ov[1] - ov[0]));
    pos = ov[1];
  }
  return pieces;
}

}  // namespace nanogpt
