// WordCache insertion, growth within its byte bound, and reset.
#include "tokenizer/word_cache.h"

#include <algorithm>

#include "core/check.h"

namespace nanogpt {

WordCache::WordCache(size_t max_bytes) {
  CHECK(max_bytes >= kMinMaxBytes, "WordCache: max_bytes {} is below the minimum {}", max_bytes,
        kMinMaxBytes);
  const size_t quarter = max_bytes / 4;
  max_slots_ = kInitialSlots;
  while (max_slots_ * 2 * sizeof(Slot) <= quarter) max_slots_ *= 2;
  max_key_bytes_ = quarter;
  max_ids_ = quarter / sizeof(uint32_t);
  slots_.resize(std::min(kInitialSlots, max_slots_));
}

template <typename Vec>
bool WordCache::make_room(Vec& v, size_t more, size_t cap) {
  const size_t need = v.size() + more;
  if (need > cap) return false;
  if (need > v.capacity()) v.reserve(std::min(cap, std::max(need, 2 * v.capacity())));
  return true;
}

void WordCache::insert(std::string_view word, uint64_t h, std::span<const uint32_t> ids) {
  if (word.empty() || word.size() > kMaxWordBytes || ids.empty()) return;
  if (size_ + 1 > max_entries() || !make_room(keys_, word.size(), max_key_bytes_) ||
      !make_room(ids_, ids.size(), max_ids_)) {
    clear();
    make_room(keys_, word.size(), max_key_bytes_);
    make_room(ids_, ids.size(), max_ids_);
  }
  if (2 * (size_ + 1) > slots_.size()) grow();
  size_t i = h & (slots_.size() - 1);
  while (slots_[i].key_len != 0) i = (i + 1) & (slots_.size() - 1);
  Slot& s = slots_[i];
  s.hash = h;
  s.key_off = static_cast<uint32_t>(keys_.size());
  s.ids_off = static_cast<uint32_t>(ids_.size());
  s.key_len = static_cast<uint16_t>(word.size());
  s.n_ids = static_cast<uint16_t>(ids.size());
  keys_.append(word);
  ids_.insert(ids_.end(), ids.begin(), ids.end());
  ++size_;
}

void WordCache::grow() {
  std::vector<Slot> old(slots_.size() * 2);
  old.swap(slots_);
  for (const Slot& s : old) {
    if (s.key_len == 0) continue;
    size_t i = s.hash & (slots_.size() - 1);
    while (slots_[i].key_len != 0) i = (i + 1) & (slots_.size() - 1);
    slots_[i] = s;
  }
}

void WordCache::clear() {
  // Keeps the allocations (at most max_bytes): the cache refills at once.
  std::fill(slots_.begin(), slots_.end(), Slot{});
  keys_.clear();
  ids_.clear();
  size_ = 0;
}

}  // namespace nanogpt
