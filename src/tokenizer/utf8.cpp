// Error-message helpers for code points (the decoding itself is inline in utf8.h).
#include "tokenizer/utf8.h"

#include <fmt/format.h>

namespace nanogpt {

std::string describe_code_point(char32_t cp) {
  std::string shown;
  if (cp == '\n') {
    shown = "\\n";
  } else if (cp == '\t') {
    shown = "\\t";
  } else if (cp == '\r') {
    shown = "\\r";
  } else if (cp < 0x20 || cp == 0x7F) {
    shown = "";  // control character: show the number only
  } else {
    append_utf8(shown, cp);
  }
  if (shown.empty()) return fmt::format("U+{:04X}", static_cast<uint32_t>(cp));
  return fmt::format("U+{:04X} '{}'", static_cast<uint32_t>(cp), shown);
}

}  // namespace nanogpt
