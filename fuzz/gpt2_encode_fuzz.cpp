// Fuzzes GPT-2 encode (tokenizer/gpt2_tokenizer, tokenizer/pretokenizer) on arbitrary bytes
// (invalid UTF-8 included): decode(encode(x)) == x, ids below the vocab size, encode_parallel and a
// cache-keeping Session equal to encode, the pre-tokenizer's pieces partitioning x. The fast
// pre-tokenizer is compared piece for piece with the PCRE2 regex on x when x is ASCII, and always
// on x mapped onto a palette of characters both Unicode tables agree on.
#include <vector>

#include "fuzz_util.h"
#include "tokenizer/gpt2_tokenizer.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/pretokenizer_pcre2.h"
#include "tokenizer/utf8.h"

namespace {

const nanogpt::Gpt2Tokenizer& tokenizer() {
  static const nanogpt::Gpt2Tokenizer tok;  // the vocabulary built into the library
  return tok;
}

const nanogpt::Pcre2PreTokenizer& pcre2() {
  static const nanogpt::Pcre2PreTokenizer ref;
  return ref;
}

// Characters assigned in every Unicode version since 6 (PCRE2 10.42 has Unicode 14, our table is
// generated from Node), covering each class and the edge cases of the regex.
constexpr char32_t kPalette[] = {
    U'a',      U'Z',      U's',      U't',      U'l',         U'e',          U'r',      U'v',
    U'm',      U'd',      U'0',      U'7',      U' ',         U' ',          U' ',      U'\t',
    U'\n',     U'\r',     U'\v',     U'\f',     U'\'',        U'\'',         U'!',      U',',
    U'.',      U'-',      U'_',      U'\u00A0', U'\u3000',    U'\uFEFF',     U'\u0085', U'\u2028',
    U'\u2029', U'\u202F', U'\u1680', U'\u200B', U'\u00E9',    U'\u00DF',     U'\u4E2D', U'\u0301',
    U'\u0663', U'\u00BD', U'\u00B2', U'\u216B', U'\u03A9',    U'\U0001F600', U'\u0436', U'\u0915',
    U'\u093F', U'\uAC00', U'\u2019', U'\u00AD', U'\U0001D518'};

void compare_with_pcre2(std::string_view text) {
  const auto ours = nanogpt::pretokenize(text);
  const auto theirs = pcre2().split(text);
  FUZZ_ASSERT(ours == theirs, "pre-tokenizer differs from PCRE2 (%zu vs %zu pieces)", ours.size(),
              theirs.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace nanogpt;
  using namespace nanogpt::fuzz;
  const Gpt2Tokenizer& tok = tokenizer();
  const std::string_view text = as_text(data, size);

  const std::vector<TokenId> ids = tok.encode(text);
  for (TokenId id : ids) FUZZ_ASSERT(id < static_cast<TokenId>(tok.vocab_size()), "id %u", id);
  FUZZ_ASSERT(tok.decode(ids) == text, "decode(encode(x)) != x");
  FUZZ_ASSERT(tok.encode_parallel(text, 3) == ids, "encode_parallel differs from encode");
  {
    Gpt2Tokenizer::Session session(tok);
    std::vector<TokenId> twice;
    session.encode(text, twice);
    session.encode(text, twice);  // the second time from the word cache
    FUZZ_ASSERT(twice.size() == 2 * ids.size() &&
                    std::equal(ids.begin(), ids.end(), twice.begin()) &&
                    std::equal(ids.begin(), ids.end(), twice.begin() + ids.size()),
                "Session (word cache) differs from encode");
  }

  // The pieces partition the text and pretoken_end agrees with pretokenize.
  size_t pos = 0;
  for (std::string_view piece : pretokenize(text)) {
    FUZZ_ASSERT(!piece.empty() && piece.data() == text.data() + pos, "pieces do not partition");
    FUZZ_ASSERT(pretoken_end(text, pos) == pos + piece.size(), "pretoken_end disagrees");
    pos += piece.size();
  }
  FUZZ_ASSERT(pos == text.size(), "pieces do not cover the text");

  bool ascii = true;
  for (size_t i = 0; i < size; ++i) ascii = ascii && data[i] < 0x80;
  if (ascii) compare_with_pcre2(text);
  std::string mapped;
  for (size_t i = 0; i < size; ++i) append_utf8(mapped, kPalette[data[i] % std::size(kPalette)]);
  compare_with_pcre2(mapped);
  return 0;
}
