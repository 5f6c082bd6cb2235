// Fuzzes GPT-2 decode (tokenizer/gpt2_tokenizer) on arbitrary ids: the input is read as
// little-endian uint16 ids (or uint32 ids when byte 0 is odd, to reach ids far above the vocab).
// Ids >= 50257 must be rejected with nanogpt::Error; otherwise the text must be the concatenation
// of the tokens' bytes, and encoding it must give ids that decode to the same text.
#include <cstring>
#include <vector>

#include "fuzz_util.h"
#include "tokenizer/gpt2_tokenizer.h"

namespace {

const nanogpt::Gpt2Tokenizer& tokenizer() {
  static const nanogpt::Gpt2Tokenizer tok;  // the vocabulary built into the library
  return tok;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace nanogpt;
  using namespace nanogpt::fuzz;
  const Gpt2Tokenizer& tok = tokenizer();
  if (size < 1) return 0;
  const bool wide = data[0] & 1;
  const size_t width = wide ? 4 : 2;
  std::vector<TokenId> ids;
  bool all_valid = true;
  for (size_t i = 1; i + width <= size; i += width) {
    uint32_t id = 0;
    std::memcpy(&id, data + i, width);  // little-endian
    ids.push_back(id);
    all_valid = all_valid && id < static_cast<uint32_t>(Gpt2Tokenizer::kVocabSize);
  }
  std::string text;
  const bool ok = accepts([&] { text = tok.decode(ids); });
  FUZZ_ASSERT(ok == all_valid, "decode %s ids out of range", ok ? "accepted" : "rejected valid");
  if (!ok) return 0;
  std::string expected;
  for (TokenId id : ids) expected += tok.vocab().token_bytes(id);
  FUZZ_ASSERT(text == expected, "decode is not the concatenation of the tokens");
  FUZZ_ASSERT(tok.decode(tok.encode(text)) == text, "decode(encode(decode(ids))) != decode(ids)");
  return 0;
}
