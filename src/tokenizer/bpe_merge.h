// Byte-pair merging of one pre-tokenized piece into token ids, with GPT-2's exact semantics: find
// the lowest-rank adjacent pair, merge every occurrence of it left to right, repeat. Two versions
// with identical output: a direct loop for short pieces and a heap-based one (n log n) for long
// pieces (e.g. a megabyte of one symbol), chosen by bpe_merge().
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/bpe_vocab.h"

namespace nanogpt {

// Pieces longer than this many bytes go to the heap-based merge.
inline constexpr size_t kBpeLongPiece = 64;

// Appends the ids of piece (non-empty bytes) to out.
void bpe_merge(const BpeVocab& vocab, std::string_view piece, std::vector<uint32_t>& out);
// The two implementations, exposed for tests.
void bpe_merge_short(const BpeVocab& vocab, std::string_view piece, std::vector<uint32_t>& out);
void bpe_merge_long(const BpeVocab& vocab, std::string_view piece, std::vector<uint32_t>& out);

}  // namespace nanogpt
