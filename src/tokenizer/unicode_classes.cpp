// Lookup of a code point's class in the generated range table (unicode_classes_table.cpp).
#include "tokenizer/unicode_classes.h"

#include <algorithm>

namespace nanogpt {

CharClass char_class(char32_t cp) {
  if (cp < 0x80) return ascii_class(static_cast<unsigned char>(cp));
  const auto ranges = unicode_class_ranges();
  // First range whose last >= cp.
  auto it = std::lower_bound(ranges.begin(), ranges.end(), cp,
                             [](const UnicodeRange& r, char32_t c) { return r.last < c; });
  if (it != ranges.end() && it->first <= cp) return it->cls;
  return CharClass::kOther;
}

}  // namespace nanogpt
