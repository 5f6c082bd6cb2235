// Classes of code points for the GPT-2 pre-tokenizer: letter (\p{L}), number (\p{N}), space (\s as
// JavaScript defines it) or other. The table is generated from Node (gen_unicode_classes.js) so we
// agree with the JavaScript reference encoders, including U+FEFF being a space and U+0085 not.
#pragma once

#include <array>
#include <cstdint>
#include <span>

namespace nanogpt {

enum class CharClass : uint8_t { kOther = 0, kLetter = 1, kNumber = 2, kSpace = 3 };

struct UnicodeRange {
  char32_t first;
  char32_t last;  // inclusive
  CharClass cls;
};

// Sorted, non-overlapping ranges of every code point that is not kOther (generated).
std::span<const UnicodeRange> unicode_class_ranges();
// Unicode version of the generated table, e.g. "17.0".
const char* unicode_classes_version();

// Class of each ASCII byte (a compile-time constant table).
inline constexpr std::array<CharClass, 128> kAsciiClasses = [] {
  std::array<CharClass, 128> t{};
  for (int c = 0; c < 128; ++c) {
    if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') {
      t[c] = CharClass::kLetter;
    } else if (c >= '0' && c <= '9') {
      t[c] = CharClass::kNumber;
    } else if (c == ' ' || (c >= '\t' && c <= '\r')) {
      t[c] = CharClass::kSpace;
    } else {
      t[c] = CharClass::kOther;
    }
  }
  return t;
}();

// Class of an ASCII byte (< 0x80).
inline CharClass ascii_class(unsigned char c) { return kAsciiClasses[c]; }

// Class of any code point (binary search over the generated ranges above ASCII).
CharClass char_class(char32_t cp);

}  // namespace nanogpt
