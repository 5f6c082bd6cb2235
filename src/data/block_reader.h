// BlockReader: cuts the documents of a DocumentReader into blocks of about block_bytes, the unit of
// prepare's parallel encoding. A block holds whole small documents and pieces of long ones. A long
// document is cut only where encoding the pieces apart gives the tokens of the whole (gpt2:
// find_stream_cut; char: any character start), so the tokens never depend on the block size.
// char: the documents form one corpus, with a '\n' put between a document that does not end with
// one and the next (nanoGPT's concatenation); that separator lies in the block between two parts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/document_reader.h"

namespace nanogpt {

enum class BlockCut { kCharacter, kPretoken };

// One document's bytes within a block.
struct DocPart {
  size_t begin = 0;  // byte range in Block::text
  size_t end = 0;
  bool first = false;      // the document starts here
  bool last = false;       // the document ends here
  int64_t doc_offset = 0;  // byte offset of `begin` within the document's text
  std::string origin;      // DocumentReader::origin() of the document
};

struct Block {
  std::string text;
  std::vector<DocPart> parts;
  int64_t input_offset = 0;  // DocumentReader::input_offset() once this block was read
};

class BlockReader {
 public:
  // char_separators: insert nanoGPT's '\n' between documents (char tokenizer).
  BlockReader(DocumentReader& docs, BlockCut cut, size_t block_bytes, bool char_separators);

  // Fills block with the next block (its old contents are dropped, its buffers reused); false when
  // the documents are exhausted. A block stays under block_bytes (text plus a few dozen bytes per
  // part) unless one piece of a document has no cut in it; then the block grows to the next cut.
  bool next(Block& block);

  int64_t documents() const { return documents_; }    // documents started so far
  int64_t text_bytes() const { return text_bytes_; }  // document bytes handed out (no separators)

 private:
  static constexpr size_t kCutMargin = 4;  // bytes read past a cut (a whole character)
  void fill(size_t want);                  // reads until the document holds > want bytes or ends
  // The last cut in [1, limit] of the text held, or 0.
  size_t find_cut(std::string_view text, size_t limit) const;
  // The first cut at or after `from` in the text held, or 0.
  size_t find_cut_after(std::string_view text, size_t from) const;
  void emit(Block& block, size_t bytes, bool last);
  size_t available() const { return pending_.size() - pending_pos_; }

  DocumentReader& docs_;
  BlockCut cut_;
  size_t block_bytes_;
  size_t chunk_bytes_;
  bool char_separators_;
  bool in_doc_ = false;
  bool doc_first_ = false;
  bool doc_eof_ = false;
  int64_t doc_offset_ = 0;
  std::string origin_;
  std::string pending_;  // the current document's bytes read but not yet in a block
  size_t pending_pos_ = 0;
  bool corpus_nonempty_ = false;
  char corpus_last_ = 0;
  int64_t documents_ = 0;
  int64_t text_bytes_ = 0;
};

}  // namespace nanogpt
