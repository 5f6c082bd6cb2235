// BpeVocab: GPT-2's vocabulary loaded from encoder.json (token string -> id) and vocab.bpe (merges
// in rank order), held as raw token bytes plus a flat hash table of (left id, right id) -> merge.
// Immutable after loading; safe to share between threads.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace nanogpt {

struct BpeMerge {
  uint32_t rank;    // line number in vocab.bpe (0 = first merge); lower merges first
  uint32_t merged;  // id of the token the pair becomes
};

class BpeVocab {
 public:
  // Reads vocab_dir/encoder.json and vocab_dir/vocab.bpe; throws nanogpt::Error naming the file
  // and what is wrong (missing, malformed, inconsistent).
  static BpeVocab load(const std::filesystem::path& vocab_dir);
  // The same from the two files' bytes; encoder_name and merges_name name them in errors.
  static BpeVocab parse(std::string_view encoder_json, std::string_view vocab_bpe,
                        const std::string& encoder_name, const std::string& merges_name);
  // GPT-2's vocabulary compiled into the binary (embedded_vocab.h): no files needed at run time.
  static BpeVocab embedded();

  size_t size() const { return tokens_.size(); }
  size_t num_merges() const { return num_merges_; }
  // Raw bytes of token id (id < size()).
  const std::string& token_bytes(uint32_t id) const { return tokens_[id]; }
  // Id of the single-byte token for b.
  uint32_t byte_token(uint8_t b) const { return byte_tokens_[b]; }
  // The merge of adjacent tokens (a, b), or nullptr if they never merge.
  const BpeMerge* find_merge(uint32_t a, uint32_t b) const {
    const uint64_t key = (static_cast<uint64_t>(a) << 32) | b;
    for (size_t i = slot_of(key);; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.key == key) return &s.merge;
      if (s.key == kEmpty) return nullptr;
    }
  }
  // Id of the token whose bytes are exactly `bytes`, if any.
  std::optional<uint32_t> find_token(std::string_view bytes) const;

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  struct Slot {
    uint64_t key = kEmpty;
    BpeMerge merge{};
  };
  size_t slot_of(uint64_t key) const {
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 32) & mask_;
  }
  void insert_merge(uint32_t a, uint32_t b, BpeMerge merge);

  std::vector<std::string> tokens_;                // id -> raw bytes
  std::unordered_map<std::string, uint32_t> ids_;  // raw bytes -> id
  uint32_t byte_tokens_[256] = {};
  std::vector<Slot> slots_;  // open addressing, power-of-two size
  size_t mask_ = 0;
  size_t num_merges_ = 0;
};

}  // namespace nanogpt
