// GPT-2 byte-pair merge: the short-piece loop and the heap-based version for long pieces.
#include "tokenizer/bpe_merge.h"

#include <algorithm>
#include <limits>
#include <queue>

namespace nanogpt {

void bpe_merge_short(const BpeVocab& vocab, std::string_view piece, std::vector<uint32_t>& out) {
  constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
  // ids[0, n) are the current symbols; rank[i] is the merge rank of (ids[i], ids[i+1]).
  size_t n = piece.size();
  uint32_t stack_buf[3 * kBpeLongPiece];
  std::vector<uint32_t> heap_buf;
  uint32_t* buf = stack_buf;
  if (n > kBpeLongPiece) {
    heap_buf.resize(3 * n);
    buf = heap_buf.data();
  }
  uint32_t* ids = buf;             // (n)
  uint32_t* rank = buf + n;        // (n)
  uint32_t* merged = buf + 2 * n;  // (n)
  for (size_t i = 0; i < n; ++i) ids[i] = vocab.byte_token(static_cast<uint8_t>(piece[i]));
  auto lookup = [&](size_t i) {
    const BpeMerge* m = vocab.find_merge(ids[i], ids[i + 1]);
    rank[i] = m ? m->rank : kNone;
    merged[i] = m ? m->merged : 0;
  };
  for (size_t i = 0; i + 1 < n; ++i) lookup(i);
  while (n > 1) {
    uint32_t best = kNone;
    size_t at = 0;
    for (size_t i = 0; i + 1 < n; ++i) {
      if (rank[i] < best) {
        best = rank[i];
        at = i;
      }
    }
    if (best == kNone) break;
    const uint32_t a = ids[at], b = ids[at + 1], ab = merged[at];
    // Merge every (a, b) left to right, non-overlapping, starting at the first one (`at`).
    size_t j = at;
    for (size_t i = at; i < n;) {
      if (i + 1 < n && ids[i] == a && ids[i + 1] == b) {
        ids[j++] = ab;
        i += 2;
      } else {
        ids[j++] = ids[i++];
      }
    }
    n = j;
    // Ranks changed only around merged symbols; recomputing from `at` on is simple and cheap.
    if (at > 0) lookup(at - 1);
    for (size_t i = at; i + 1 < n; ++i) lookup(i);
  }
  out.insert(out.end(), ids, ids + n);
}

void bpe_merge_long(const BpeVocab& vocab, std::string_view piece, std::vector<uint32_t>& out) {
  constexpr uint32_t kEnd = std::numeric_limits<uint32_t>::max();
  const auto n = static_cast<uint32_t>(piece.size());
  // A doubly linked list of symbols; a node keeps its original index, so index order is text
  // order. A merge keeps the left node and unlinks the right one.
  std::vector<uint32_t> tok(n), prev(n), next(n);
  std::vector<bool> alive(n, true);
  for (uint32_t i = 0; i < n; ++i) {
    tok[i] = vocab.byte_token(static_cast<uint8_t>(piece[i]));
    prev[i] = i == 0 ? kEnd : i - 1;
    next[i] = i + 1 == n ? kEnd : i + 1;
  }
  struct Entry {
    uint32_t rank;
    uint32_t left;  // node index of the pair's left symbol
    bool operator>(const Entry& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
  };
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap;
  std::vector<Entry> pending;
  auto pair_at = [&](uint32_t left, std::vector<Entry>& into) {
    if (left == kEnd || next[left] == kEnd) return;
    if (const BpeMerge* m = vocab.find_merge(tok[left], tok[next[left]])) {
      into.push_back({m->rank, left});
    }
  };
  for (uint32_t i = 0; i + 1 < n; ++i) pair_at(i, pending);
  for (const Entry& e : pending) heap.push(e);
  while (!heap.empty()) {
    // One round: every occurrence of the lowest-rank pair, left to right (heap order by index).
    // Pairs created during the round wait in `pending` so that, as in GPT-2, they are only
    // considered after the round, even if their rank is lower.
    const uint32_t round_rank = heap.top().rank;
    pending.clear();
    while (!heap.empty() && heap.top().rank == round_rank) {
      const uint32_t left = heap.top().left;
      heap.pop();
      if (!alive[left] || next[left] == kEnd) continue;
      const uint32_t right = next[left];
      const BpeMerge* m = vocab.find_merge(tok[left], tok[right]);
      if (m == nullptr || m->rank != round_rank) continue;  // stale entry
      tok[left] = m->merged;
      alive[right] = false;
      next[left] = next[right];
      if (next[right] != kEnd) prev[next[right]] = left;
      pair_at(prev[left], pending);
      pair_at(left, pending);
    }
    for (const Entry& e : pending) heap.push(e);
  }
  for (uint32_t i = 0; i != kEnd && n > 0; i = next[i]) out.push_back(tok[i]);
}

void bpe_merge(const BpeVocab& vocab, std::string_view piece, std::vector<uint32_t>& out) {
  if (piece.size() == 1) {
    out.push_back(vocab.byte_token(static_cast<uint8_t>(piece[0])));
  } else if (piece.size() <= kBpeLongPiece) {
    bpe_merge_short(vocab, piece, out);
  } else {
    bpe_merge_long(vocab, piece, out);
  }
}

}  // namespace nanogpt
