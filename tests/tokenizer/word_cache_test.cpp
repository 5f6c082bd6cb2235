// Tests of the GPT-2 word cache's bound: endless distinct words never take it past max_bytes, what
// it holds is found again, and a session with a tiny cache encodes exactly like one with a big one.
#include "tokenizer/word_cache.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/check.h"
#include "tokenizer/gpt2_tokenizer.h"

namespace nanogpt {
namespace {

std::string word_of(uint64_t i) {
  std::string w = " w";
  for (; i > 0; i /= 26) w += static_cast<char>('a' + i % 26);
  return w;
}

TEST(WordCache, BytesStayUnderTheBoundWhateverTheWords) {
  const size_t max_bytes = size_t{1} << 20;
  WordCache cache(max_bytes);
  size_t peak = 0;
  size_t clears = 0;
  size_t last_size = 0;
  for (uint64_t i = 0; i < 200000; ++i) {
    const std::string w = word_of(i);
    const std::vector<uint32_t> ids = {static_cast<uint32_t>(i), static_cast<uint32_t>(i + 1)};
    cache.insert(w, WordCache::hash(w), ids);
    peak = std::max(peak, cache.bytes());
    if (cache.size() < last_size) ++clears;
    last_size = cache.size();
    // The word just inserted is there with its ids.
    auto found = cache.find(w, WordCache::hash(w));
    ASSERT_EQ(found.size(), 2u) << i;
    EXPECT_EQ(found[0], i);
  }
  EXPECT_LE(peak, max_bytes);
  EXPECT_GT(clears, 0u) << "200000 words should have filled a 1 MiB cache";
  EXPECT_LE(cache.size(), cache.max_entries());
  // After a clear, earlier words are gone, later ones found.
  cache.clear();
  EXPECT_TRUE(cache.find(word_of(7), WordCache::hash(word_of(7))).empty());
  EXPECT_THROW(WordCache(WordCache::kMinMaxBytes - 1), Error);
}

TEST(WordCache, SessionWithATinyCacheEncodesLikeTheDefault) {
  const Gpt2Tokenizer tok;
  std::string text;  // tens of thousands of distinct words, some repeated
  for (uint64_t i = 0; text.size() < 400000; ++i) {
    text += word_of(i * 7919 % 60000);
    if (i % 13 == 0) text += ",";
    if (i % 17 == 0) text += ".\n";
  }
  Gpt2Tokenizer::Session tiny(tok, WordCache::kMinMaxBytes);
  std::vector<TokenId> ids;
  for (size_t pos = 0; pos < text.size(); pos += 50000) {
    tiny.encode(std::string_view(text).substr(pos, 50000), ids);  // (cuts at spaces mostly)
  }
  EXPECT_LE(tiny.cache().bytes(), WordCache::kMinMaxBytes);
  std::vector<TokenId> whole;
  Gpt2Tokenizer::Session big(tok);
  for (size_t pos = 0; pos < text.size(); pos += 50000) {
    big.encode(std::string_view(text).substr(pos, 50000), whole);
  }
  EXPECT_EQ(ids, whole);
}

}  // namespace
}  // namespace nanogpt
