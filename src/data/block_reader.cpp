// BlockReader: filling blocks from documents, choosing cuts, separators for the char corpus.
#include "data/block_reader.h"

#include <algorithm>

#include "tokenizer/pretokenizer.h"

namespace nanogpt {

BlockReader::BlockReader(DocumentReader& docs, BlockCut cut, size_t block_bytes,
                         bool char_separators)
    : docs_(docs),
      cut_(cut),
      block_bytes_(std::max<size_t>(block_bytes, 1)),
      chunk_bytes_(std::max<size_t>(block_bytes_ / 4, 4096)),
      char_separators_(char_separators) {
  // The most the read-ahead holds outside the growth of a block without a cut: reserved once, so
  // appending never doubles the buffer.
  pending_.reserve(block_bytes_ + chunk_bytes_ + kCutMargin + 1);
}

void BlockReader::fill(size_t want) {
  while (!doc_eof_ && available() <= want) {
    if (pending_pos_ > 0) {
      pending_.erase(0, pending_pos_);
      pending_pos_ = 0;
    }
    if (docs_.read(pending_, chunk_bytes_) == 0) doc_eof_ = true;
  }
}

size_t BlockReader::find_cut(std::string_view text, size_t limit) const {
  if (cut_ == BlockCut::kPretoken) return find_stream_cut(text, limit);
  for (size_t pos = std::min(limit, text.size() - 1); pos >= 1; --pos) {
    if ((static_cast<unsigned char>(text[pos]) & 0xC0) != 0x80) return pos;
  }
  return 0;
}

size_t BlockReader::find_cut_after(std::string_view text, size_t from) const {
  if (cut_ == BlockCut::kPretoken) {
    for (size_t pos = std::max<size_t>(from, 1); pos + kCutMargin <= text.size(); ++pos) {
      if (is_stream_cut(text, pos)) return pos;
    }
    return 0;
  }
  for (size_t pos = std::max<size_t>(from, 1); pos < text.size(); ++pos) {
    if ((static_cast<unsigned char>(text[pos]) & 0xC0) != 0x80) return pos;
  }
  return 0;
}

void BlockReader::emit(Block& block, size_t bytes, bool last) {
  DocPart part;
  part.begin = block.text.size();
  part.end = part.begin + bytes;
  part.first = doc_first_;
  part.last = last;
  part.doc_offset = doc_offset_;
  part.origin = origin_;
  block.text.append(pending_, pending_pos_, bytes);
  block.parts.push_back(std::move(part));
  if (bytes > 0) {
    corpus_nonempty_ = true;
    corpus_last_ = pending_[pending_pos_ + bytes - 1];
  }
  pending_pos_ += bytes;
  doc_offset_ += static_cast<int64_t>(bytes);
  text_bytes_ += static_cast<int64_t>(bytes);
  doc_first_ = false;
  if (last) in_doc_ = false;
}

bool BlockReader::next(Block& block) {
  block.text.clear();
  block.parts.clear();
  block.text.reserve(block_bytes_);
  size_t weight = 0;  // text bytes + part records
  while (weight < block_bytes_) {
    if (!in_doc_) {
      if (!docs_.next_document()) break;
      in_doc_ = true;
      doc_first_ = true;
      doc_eof_ = false;
      doc_offset_ = 0;
      pending_.clear();
      pending_pos_ = 0;
      origin_ = docs_.origin();
      ++documents_;
      if (char_separators_ && corpus_nonempty_ && corpus_last_ != '\n') {
        block.text += '\n';
        corpus_last_ = '\n';
        ++weight;
      }
      continue;
    }
    const size_t part_weight = sizeof(DocPart) + origin_.size();
    const size_t room = block_bytes_ - weight;
    fill(room + kCutMargin);
    if (doc_eof_ && available() <= room) {
      weight += available() + part_weight;
      emit(block, available(), /*last=*/true);
      continue;
    }
    size_t cut = find_cut({pending_.data() + pending_pos_, available()}, room);
    if (cut == 0) {
      if (weight > 0) break;  // the document goes on in the next block
      // No cut within a whole block: read on to the next cut or the end of the document.
      size_t from = room + 1;
      while (true) {
        cut = find_cut_after({pending_.data() + pending_pos_, available()}, from);
        if (cut != 0 || doc_eof_) break;
        from = std::max(from, available() > kCutMargin ? available() - kCutMargin : 1);
        fill(available() + chunk_bytes_);
      }
      if (cut == 0) {
        emit(block, available(), /*last=*/true);
        break;
      }
    }
    emit(block, cut, /*last=*/false);
    break;
  }
  block.input_offset = docs_.input_offset();
  return !block.parts.empty() || !block.text.empty();
}

}  // namespace nanogpt
