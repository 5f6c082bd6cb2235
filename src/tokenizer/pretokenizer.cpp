// Hand-written GPT-2 pre-tokenizer scanner (see pretokenizer.h for the pattern it implements and
// how invalid UTF-8 is treated) and the safe split points used for parallel encoding.
#include "tokenizer/pretokenizer.h"

#include <algorithm>

#include "tokenizer/unicode_classes.h"
#include "tokenizer/utf8.h"

namespace nanogpt {
namespace {

struct Unit {
  CharClass cls;
  uint32_t len;
};

// Class and byte length of the character at text[pos]; an invalid byte is "other", length 1.
inline Unit unit_at(std::string_view text, size_t pos) {
  const auto c = static_cast<unsigned char>(text[pos]);
  if (c < 0x80) return {ascii_class(c), 1};
  const Utf8Char u = decode_utf8(text, pos);
  if (!u.valid) return {CharClass::kOther, 1};
  return {char_class(u.cp), u.len};
}

// End of the run of characters of class cls starting at pos.
inline size_t run_end(std::string_view text, size_t pos, CharClass cls) {
  const size_t n = text.size();
  while (pos < n) {
    const auto c = static_cast<unsigned char>(text[pos]);
    if (c < 0x80) {
      if (ascii_class(c) != cls) break;
      ++pos;
      continue;
    }
    const Unit u = unit_at(text, pos);
    if (u.cls != cls) break;
    pos += u.len;
  }
  return pos;
}

// Length of a contraction ('s 't 'm 'd 're 've 'll) at pos, or 0.
inline size_t contraction_len(std::string_view text, size_t pos) {
  const size_t n = text.size();
  if (pos + 1 >= n) return 0;
  const char a = text[pos + 1];
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (pos + 2 >= n) return 0;
  const char b = text[pos + 2];
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

inline bool is_ascii_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }
inline bool is_ascii_graphic(char c) { return c > ' ' && c < 0x7F; }

}  // namespace

size_t pretoken_end(std::string_view text, size_t pos) {
  const size_t n = text.size();
  const char c = text[pos];
  // 's|'t|'re|'ve|'m|'ll|'d
  if (c == '\'') {
    if (size_t len = contraction_len(text, pos)) return pos + len;
  }
  // ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+` with the optional leading space.
  if (c == ' ' && pos + 1 < n) {
    const Unit next = unit_at(text, pos + 1);
    if (next.cls != CharClass::kSpace) return run_end(text, pos + 1 + next.len, next.cls);
  }
  const Unit first = unit_at(text, pos);
  if (first.cls != CharClass::kSpace) return run_end(text, pos + first.len, first.cls);
  // `\s+(?!\S)` then `\s+`: a whitespace run keeps its last character for the next piece when a
  // non-space follows (so " word" stays together), unless the run is one character long.
  size_t p = pos;
  size_t last = pos;
  while (p < n) {
    const Unit u = unit_at(text, p);
    if (u.cls != CharClass::kSpace) break;
    last = p;
    p += u.len;
  }
  if (p == n) return n;
  return last > pos ? last : p;
}

std::vector<std::string_view> pretokenize(std::string_view text) {
  std::vector<std::string_view> pieces;
  for (size_t pos = 0; pos < text.size();) {
    const size_t end = pretoken_end(text, pos);
    pieces.push_back(text.substr(pos, end - pos));
    pos = end;
  }
  return pieces;
}

bool is_safe_split(std::string_view text, size_t pos) {
  if (pos == 0 || pos >= text.size()) return true;
  return is_ascii_space(text[pos]) && is_ascii_graphic(text[pos - 1]);
}

std::vector<size_t> split_points(std::string_view text, int parts) {
  std::vector<size_t> points{0};
  const size_t n = text.size();
  for (int i = 1; i < parts; ++i) {
    size_t pos = std::max(points.back() + 1, n / static_cast<size_t>(parts) * i);
    while (pos < n && !is_safe_split(text, pos)) ++pos;
    if (pos >= n) break;
    points.push_back(pos);
  }
  points.push_back(n);
  return points;
}

namespace {

// True if a piece boundary at pos depends on the two characters around it only: a valid
// character of class letter, number or other (not an apostrophe, which may open a contraction)
// followed by one of another non-space class. The piece before pos is a run of the first class
// (or a contraction ending in a letter) and ends at pos whether or not text goes on; the piece
// from pos is found by looking forward only.
bool is_class_change(std::string_view text, size_t pos) {
  size_t start = pos - 1;
  while (start > 0 && pos - start < 4 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) {
    --start;
  }
  const Utf8Char prev = decode_utf8(text, start);
  if (!prev.valid || start + prev.len != pos || prev.cp == '\'') return false;
  const CharClass before =
      prev.cp < 0x80 ? ascii_class(static_cast<unsigned char>(prev.cp)) : char_class(prev.cp);
  const CharClass after = unit_at(text, pos).cls;
  return before != CharClass::kSpace && after != CharClass::kSpace && before != after;
}

}  // namespace

bool is_stream_cut(std::string_view text, size_t pos) {
  return is_safe_split(text, pos) || is_class_change(text, pos);
}

size_t find_stream_cut(std::string_view text, size_t limit) {
  limit = std::min(limit, text.size() >= 4 ? text.size() - 4 : 0);
  for (size_t pos = limit; pos >= 1; --pos) {
    if (is_stream_cut(text, pos)) return pos;
  }
  return 0;
}

}  // namespace nanogpt
