// Tokenizer: the common interface of the char-level and GPT-2 BPE tokenizers (what prepare, the
// data loader and sample need), plus the factory that reads a dataset's meta.json.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace nanogpt {

using TokenId = uint32_t;

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  // Token ids of text (bytes; UTF-8 expected). Throws nanogpt::Error if text cannot be encoded.
  virtual std::vector<TokenId> encode(std::string_view text) const = 0;
  // The bytes of ids concatenated; throws nanogpt::Error on an id >= vocab_size().
  virtual std::string decode(std::span<const TokenId> ids) const = 0;
  virtual int vocab_size() const = 0;
  // The end-of-text id, or -1 if the tokenizer has none.
  virtual int eot_token() const = 0;
  // "char" or "gpt2" (the "tokenizer" value in meta.json).
  virtual std::string name() const = 0;
};

// Reads data_dir/meta.json: {"tokenizer": "char", ...} -> CharTokenizer (also nanoGPT's meta with
// only vocab_size/itos/stoi); {"tokenizer": "gpt2"} -> Gpt2Tokenizer with the built-in vocabulary,
// or with "vocab_dir": ... the files there (a relative vocab_dir is taken relative to data_dir).
// Throws nanogpt::Error naming the file and the problem.
std::unique_ptr<Tokenizer> load_tokenizer(const std::filesystem::path& data_dir);

// Writes the meta.json of a GPT-2 BPE dataset to `path`: {"tokenizer": "gpt2", "vocab_size": 50257,
// "eot": 50256}, plus "vocab_dir": <absolute vocab_dir> when vocab_dir is not empty (then checks
// that it holds encoder.json and vocab.bpe); an empty vocab_dir means the built-in vocabulary.
void write_gpt2_meta(const std::filesystem::path& path, const std::filesystem::path& vocab_dir);

}  // namespace nanogpt
