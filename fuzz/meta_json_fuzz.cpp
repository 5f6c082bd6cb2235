// Fuzzes a dataset's meta.json (tokenizer/tokenizer_factory: load_tokenizer, and CharTokenizer's
// validated load_meta): {"tokenizer": "char" | "gpt2", "vocab_size", "itos", "stoi", "vocab_dir"}.
// An accepted char vocabulary must decode every id and encode that text back to the same ids, and
// must survive save_meta -> load_meta.
#include <numeric>
#include <vector>

#include "fuzz_util.h"
#include "tokenizer/char_tokenizer.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace nanogpt;
  using namespace nanogpt::fuzz;
  write_scratch_file("meta.json", as_text(data, size));
  std::unique_ptr<Tokenizer> tok;
  if (!accepts([&] { tok = load_tokenizer(scratch_dir()); })) return 0;
  FUZZ_ASSERT(tok->vocab_size() > 0, "empty vocabulary accepted");
  if (tok->name() != "char") return 0;
  std::vector<TokenId> ids(static_cast<size_t>(tok->vocab_size()));
  std::iota(ids.begin(), ids.end(), TokenId{0});
  const std::string text = tok->decode(ids);
  FUZZ_ASSERT(tok->encode(text) == ids, "char vocab: encode(decode(ids)) != ids");
  const auto saved = scratch_dir() / "saved_meta.json";
  const auto& chars = static_cast<const CharTokenizer&>(*tok);
  chars.save_meta(saved);
  FUZZ_ASSERT(CharTokenizer::load_meta(saved).chars() == chars.chars(), "save/load changed vocab");
  return 0;
}
