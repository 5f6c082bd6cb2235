// WordCache: piece bytes -> token ids, so repeated words skip the BPE merge. An open-addressing
// table over two flat arrays (key bytes, ids) addressed by offsets; owned by one thread/session.
// Its memory is bounded by max_bytes whatever the input: when a part is full the cache is cleared
// (kept allocated) and refills, so a corpus of endless distinct words cannot grow it.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace nanogpt {

class WordCache {
 public:
  static constexpr size_t kMaxWordBytes = 128;  // longer pieces are not cached
  static constexpr size_t kDefaultMaxBytes = size_t{128} << 20;
  static constexpr size_t kMinMaxBytes = size_t{512} << 10;

  // max_bytes (>= kMinMaxBytes) bounds slots, key bytes and ids together: a quarter each, so that
  // growing one of them (old and new arrays alive at once) stays under max_bytes too.
  explicit WordCache(size_t max_bytes = kDefaultMaxBytes);

  static uint64_t hash(std::string_view word) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ word.size();
    const char* p = word.data();
    size_t left = word.size();
    for (; left >= 8; left -= 8, p += 8) {
      uint64_t w;
      std::memcpy(&w, p, 8);
      h = (h ^ w) * 0xFF51AFD7ED558CCDull;
      h ^= h >> 32;
    }
    if (left > 0) {
      uint64_t w = 0;
      std::memcpy(&w, p, left);
      h = (h ^ w) * 0xC4CEB9FE1A85EC53ull;
      h ^= h >> 29;
    }
    return h;
  }

  // The cached ids of word, or an empty span when absent (a cached word has at least one id).
  std::span<const uint32_t> find(std::string_view word, uint64_t h) const {
    for (size_t i = h & (slots_.size() - 1);; i = (i + 1) & (slots_.size() - 1)) {
      const Slot& s = slots_[i];
      if (s.key_len == 0) return {};
      if (s.hash == h && s.key_len == word.size() &&
          std::memcmp(keys_.data() + s.key_off, word.data(), word.size()) == 0) {
        return {ids_.data() + s.ids_off, s.n_ids};
      }
    }
  }

  // Remembers ids for word (no-op for words longer than kMaxWordBytes or empty).
  void insert(std::string_view word, uint64_t h, std::span<const uint32_t> ids);

  size_t size() const { return size_; }
  // Entries held before the cache clears itself (the slot table is at most half full).
  size_t max_entries() const { return max_slots_ / 2; }
  // Bytes allocated now (slot table, key bytes, ids).
  size_t bytes() const {
    return slots_.capacity() * sizeof(Slot) + keys_.capacity() + ids_.capacity() * sizeof(uint32_t);
  }
  void clear();

 private:
  static constexpr size_t kInitialSlots = 4096;
  struct Slot {
    uint64_t hash = 0;
    uint32_t key_off = 0;
    uint32_t ids_off = 0;
    uint16_t key_len = 0;  // 0 = empty slot
    uint16_t n_ids = 0;
  };
  void grow();
  // Makes room for `more` elements in v without passing cap elements; false if it cannot.
  template <typename Vec>
  static bool make_room(Vec& v, size_t more, size_t cap);

  size_t max_slots_;  // power of two
  size_t max_key_bytes_;
  size_t max_ids_;
  std::vector<Slot> slots_;    // power-of-two size, at most half full
  std::string keys_;           // key bytes of all entries
  std::vector<uint32_t> ids_;  // ids of all entries
  size_t size_ = 0;
};

}  // namespace nanogpt
