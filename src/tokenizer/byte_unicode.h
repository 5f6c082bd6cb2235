// GPT-2's reversible byte <-> printable code point table (bytes_to_unicode in OpenAI's encoder.py):
// encoder.json and vocab.bpe spell every byte of a token as one of these code points.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

namespace nanogpt {

// code point for each byte: printable Latin-1 bytes map to themselves, the other 68 bytes to
// U+0100.. U+0143 in byte order.
std::array<char32_t, 256> byte_to_code_point_table();

// The byte a code point stands for, or nullopt if it is not in the table.
std::optional<uint8_t> code_point_to_byte(char32_t cp);

}  // namespace nanogpt
