// Block work for the char and GPT-2 tokenizers: slicing, narrowing ids to uint16, EOT placement.
#include "data/block_encoders.h"

#include "core/check.h"
#include "tokenizer/pretokenizer.h"

namespace nanogpt {

namespace {

void append_narrowed(const std::vector<TokenId>& ids, std::vector<uint16_t>& tokens) {
  for (TokenId id : ids) tokens.push_back(static_cast<uint16_t>(id));
}

// Ensures room for the block's worst case (one token per byte, one EOT per document) up front, so
// the token vector never reallocates while it fills.
void reserve_tokens(const Block& block, std::vector<uint16_t>& tokens) {
  tokens.reserve(block.text.size() + block.parts.size());
}

}  // namespace

BlockWork CharSetCollector::work() {
  return [this](int worker, const Block& block, std::vector<uint16_t>&) {
    CodePointSet& set = sets_[static_cast<size_t>(worker)];
    size_t covered = 0;
    for (const DocPart& part : block.parts) {
      const std::string_view text(block.text.data() + part.begin, part.end - part.begin);
      const size_t bad = set.add(text);
      CHECK(bad == text.size(),
            "{}: invalid UTF-8 byte 0x{:02X} at byte offset {}; the char tokenizer needs UTF-8 "
            "text (tokenizer='gpt2' takes any bytes)",
            part.origin, static_cast<unsigned>(static_cast<unsigned char>(text[bad])),
            part.doc_offset + static_cast<int64_t>(bad));
      covered += text.size();
    }
    if (covered < block.text.size()) set.add("\n");  // the separators between documents
  };
}

CodePointSet CharSetCollector::merged() const {
  CodePointSet all;
  for (const auto& s : sets_) all.merge(s);
  return all;
}

BlockWork char_encode_work(const CharTokenizer& tokenizer) {
  return [&tokenizer](int, const Block& block, std::vector<uint16_t>& tokens) {
    reserve_tokens(block, tokens);
    std::string_view text = block.text;
    while (!text.empty()) {
      size_t cut = std::min(text.size(), kEncodeSliceBytes);
      while (cut < text.size() && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) ++cut;
      append_narrowed(tokenizer.encode(text.substr(0, cut)), tokens);
      text.remove_prefix(cut);
    }
  };
}

Gpt2BlockEncoder::Gpt2BlockEncoder(const Gpt2Tokenizer& tokenizer, const PreparePlan& plan,
                                   bool eot_first)
    : tokenizer_(tokenizer), eot_first_(eot_first), scratch_(static_cast<size_t>(plan.threads)) {
  for (int t = 0; t < plan.threads; ++t) {
    sessions_.push_back(
        std::make_unique<Gpt2Tokenizer::Session>(tokenizer_, plan.word_cache_bytes));
  }
}

BlockWork Gpt2BlockEncoder::work() {
  return [this](int worker, const Block& block, std::vector<uint16_t>& tokens) {
    Gpt2Tokenizer::Session& session = *sessions_[static_cast<size_t>(worker)];
    std::vector<TokenId>& ids = scratch_[static_cast<size_t>(worker)];
    const auto eot = static_cast<uint16_t>(Gpt2Tokenizer::kEot);
    reserve_tokens(block, tokens);
    for (const DocPart& part : block.parts) {
      if (eot_first_ && part.first) tokens.push_back(eot);
      std::string_view text(block.text.data() + part.begin, part.end - part.begin);
      while (!text.empty()) {
        size_t cut =
            text.size() > kEncodeSliceBytes + 4 ? find_stream_cut(text, kEncodeSliceBytes) : 0;
        if (cut == 0) cut = text.size();
        ids.clear();
        session.encode(text.substr(0, cut), ids);
        append_narrowed(ids, tokens);
        text.remove_prefix(cut);
      }
      if (!eot_first_ && part.last) tokens.push_back(eot);
    }
  };
}

}  // namespace nanogpt
