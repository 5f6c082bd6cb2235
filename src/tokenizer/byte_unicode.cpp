// GPT-2 byte <-> code point table.
#include "tokenizer/byte_unicode.h"

namespace nanogpt {
namespace {

bool maps_to_itself(int b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

}  // namespace

std::array<char32_t, 256> byte_to_code_point_table() {
  std::array<char32_t, 256> table{};
  char32_t next = 256;
  for (int b = 0; b < 256; ++b) table[b] = maps_to_itself(b) ? static_cast<char32_t>(b) : next++;
  return table;
}

std::optional<uint8_t> code_point_to_byte(char32_t cp) {
  if (cp < 256) {
    if (maps_to_itself(static_cast<int>(cp))) return static_cast<uint8_t>(cp);
    return std::nullopt;
  }
  // U+0100 + n is the n-th byte (in byte order) that does not map to itself.
  int n = static_cast<int>(cp) - 256;
  for (int b = 0; b < 256; ++b) {
    if (maps_to_itself(b)) continue;
    if (n-- == 0) return static_cast<uint8_t>(b);
  }
  return std::nullopt;
}

}  // namespace nanogpt
