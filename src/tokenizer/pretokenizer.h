// The GPT-2 pre-tokenizer as a hand-written scanner: splits text into the pieces that the regex
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// matches under JavaScript semantics (gpt-3-encoder, js-tiktoken); BPE then runs on each piece.
//
// Invalid UTF-8: text is bytes. A byte that does not start a valid UTF-8 character is one unit of
// class "other" (as the U+FFFD that a UTF-8 decoder would put there is a symbol), so it joins the
// neighbouring symbol run ` ?[^\s\p{L}\p{N}]+`; its raw byte is kept. Pieces always partition the
// input exactly, so decode(encode(x)) == x for any byte string.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace nanogpt {

// End (exclusive byte offset) of the piece that starts at pos; requires pos < text.size().
size_t pretoken_end(std::string_view text, size_t pos);

// All pieces of text, in order; their concatenation is text.
std::vector<std::string_view> pretokenize(std::string_view text);

// True if splitting text at byte pos and pre-tokenizing the two halves separately gives the same
// pieces as pre-tokenizing the whole: pos is 0, text.size(), or an ASCII whitespace byte preceded
// by a printable non-space ASCII byte (no piece crosses it and no piece before it looks past it).
bool is_safe_split(std::string_view text, size_t pos);

// Offsets 0 = b0 < b1 < ... < bk = text.size() cutting text into at most `parts` chunks of about
// equal size at safe split points; encoding the chunks independently and concatenating the ids is
// identical to encoding the whole text.
std::vector<size_t> split_points(std::string_view text, int parts);

// For streaming a document in blocks when only a prefix `text` of it has been read: the largest
// cut c in [1, limit] such that pre-tokenizing text[0, c) alone and then the document from c on
// gives the pieces of one pass over the whole document, whatever follows `text`; 0 if none.
// Cuts lie at least 4 bytes before the end of text (the characters around a cut are complete).
// Cuts: is_safe_split points, and changes between two of the classes letter, number, other of two
// valid characters the first of which is not an apostrophe (for text without ASCII spaces).
size_t find_stream_cut(std::string_view text, size_t limit);
// True if pos is such a cut; requires 1 <= pos and pos + 4 <= text.size().
bool is_stream_cut(std::string_view text, size_t pos);

}  // namespace nanogpt
