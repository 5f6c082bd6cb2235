// WordCache insertion, growth and reset.
#include "tokenizer/word_cache.h"

namespace nanogpt {

void WordCache::insert(std::string_view word, uint64_t h, std::span<const uint32_t> ids) {
  if (word.empty() || word.size() > kMaxWordBytes || ids.empty()) return;
  if (size_ >= kMaxEntries) clear();
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
  slots_.assign(kInitialSlots, Slot{});
  keys_.clear();
  ids_.clear();
  size_ = 0;
}

}  // namespace nanogpt
