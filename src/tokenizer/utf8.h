// UTF-8 decoding and encoding of single code points. Decoding is strict (no overlongs, no
// surrogates, nothing above U+10FFFF); an invalid byte is reported as such with length 1 so callers
// can keep raw bytes and never crash on arbitrary input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace nanogpt {

struct Utf8Char {
  char32_t cp = 0;   // the code point; U+FFFD when !valid
  uint32_t len = 1;  // bytes consumed (1 for an invalid byte)
  bool valid = true;
};

// Decodes the character starting at text[pos]; requires pos < text.size().
inline Utf8Char decode_utf8(std::string_view text, size_t pos) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data()) + pos;
  const size_t left = text.size() - pos;
  const unsigned b0 = s[0];
  if (b0 < 0x80) return {b0, 1, true};
  constexpr Utf8Char kInvalid{0xFFFD, 1, false};
  auto cont = [&](size_t i) { return i < left && (s[i] & 0xC0) == 0x80; };
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    if (!cont(1)) return kInvalid;
    return {static_cast<char32_t>(((b0 & 0x1F) << 6) | (s[1] & 0x3F)), 2, true};
  }
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    if (!cont(1) || !cont(2)) return kInvalid;
    if (b0 == 0xE0 && s[1] < 0xA0) return kInvalid;  // overlong
    if (b0 == 0xED && s[1] > 0x9F) return kInvalid;  // surrogate
    return {static_cast<char32_t>(((b0 & 0x0F) << 12) | ((s[1] & 0x3F) << 6) | (s[2] & 0x3F)), 3,
            true};
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return kInvalid;
    if (b0 == 0xF0 && s[1] < 0x90) return kInvalid;  // overlong
    if (b0 == 0xF4 && s[1] > 0x8F) return kInvalid;  // above U+10FFFF
    return {static_cast<char32_t>(((b0 & 0x07) << 18) | ((s[1] & 0x3F) << 12) |
                                  ((s[2] & 0x3F) << 6) | (s[3] & 0x3F)),
            4, true};
  }
  return kInvalid;
}

// Appends the UTF-8 encoding of cp (which must be a valid scalar value) to out.
inline void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// "U+00E9 'é'" style description of a code point for error messages.
std::string describe_code_point(char32_t cp);

}  // namespace nanogpt
