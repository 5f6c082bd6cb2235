// Tests of CharTokenizer: tinyshakespeare's 65-character vocab, code points (not bytes), meta.json
// round trip and nanoGPT compatibility, and the errors (unknown char, invalid UTF-8, bad meta).
#include "tokenizer/char_tokenizer.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "tokenizer_test_util.h"

namespace nanogpt {
namespace {

using test::error_of;
using test::read_file;
using test::temp_dir;
using test::write_file;

TEST(CharTokenizer, TinyShakespeareHas65Chars) {
  const std::string text = read_file(std::string(NANOGPT_SHARED_DIR) + "/data/tinyshakespeare.txt");
  ASSERT_EQ(text.size(), 1115394u);
  const CharTokenizer tok = CharTokenizer::build(text);
  EXPECT_EQ(tok.vocab_size(), 65);
  EXPECT_EQ(tok.chars().front(), U'\n');
  EXPECT_EQ(tok.chars()[1], U' ');
  EXPECT_EQ(tok.chars().back(), U'z');
  const std::string expected = "\n !$&',-.3:;?ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  EXPECT_EQ(tok.decode(tok.encode(expected)), expected);
  const auto ids = tok.encode(text);
  ASSERT_EQ(ids.size(), text.size());
  EXPECT_EQ(ids[0], 18u);  // 'F' as in nanoGPT (itos[18] == 'F')
  EXPECT_EQ(tok.decode(ids), text);
  EXPECT_EQ(tok.eot_token(), -1);
  EXPECT_EQ(tok.name(), "char");
}

TEST(CharTokenizer, VocabIsSortedCodePointsNotBytes) {
  const std::string text =
      "h\xC3\xA9llo \xE2\x86\x92 \xF0\x9F\x98\x80 h\xC3\xA9";  // "héllo → 😀 hé"
  const CharTokenizer tok = CharTokenizer::build(text);
  const std::vector<char32_t> expected = {U' ',      U'h',      U'l',         U'o',
                                          U'\u00E9', U'\u2192', U'\U0001F600'};
  EXPECT_EQ(tok.chars(), expected);
  const auto ids = tok.encode(text);
  EXPECT_EQ(ids.size(), 12u);
  EXPECT_EQ(ids[1], 4u);  // é
  EXPECT_EQ(tok.decode(ids), text);
}

TEST(CharTokenizer, MetaJsonRoundTripInNanoGptShape) {
  const auto dir = temp_dir("char_meta");
  const CharTokenizer tok = CharTokenizer::build("ab\n\xC3\xA9\"\\");
  tok.save_meta(dir / "meta.json");
  const auto meta = nlohmann::json::parse(read_file(dir / "meta.json"));
  EXPECT_EQ(meta["vocab_size"], 6);
  EXPECT_EQ(meta["tokenizer"], "char");
  EXPECT_EQ(meta["itos"]["0"], "\n");
  EXPECT_EQ(meta["stoi"]["\n"], 0);
  EXPECT_EQ(meta["itos"]["5"], "\xC3\xA9");
  const CharTokenizer back = CharTokenizer::load_meta(dir / "meta.json");
  EXPECT_EQ(back.chars(), tok.chars());
  auto any = load_tokenizer(dir);
  EXPECT_EQ(any->name(), "char");
  EXPECT_EQ(any->vocab_size(), 6);
  EXPECT_EQ(any->encode("ba\n"), tok.encode("ba\n"));
}

TEST(CharTokenizer, LoadsNanoGptMetaWithoutTokenizerKey) {
  const auto dir = temp_dir("char_nanogpt");
  write_file(dir / "meta.json", R"({"vocab_size": 3, "itos": {"0": "\n", "1": "a", "2": "b"},)"
                                R"( "stoi": {"\n": 0, "a": 1, "b": 2}})");
  auto tok = load_tokenizer(dir);
  EXPECT_EQ(tok->name(), "char");
  EXPECT_EQ(tok->encode("ab\n"), (std::vector<TokenId>{1, 2, 0}));
}

TEST(CharTokenizer, UnknownCharacterNamesCharAndOffset) {
  const CharTokenizer tok = CharTokenizer::build("abc \xC3\xA9");
  const std::string msg = error_of([&] { tok.encode("ab \xC3\xA9X"); });
  EXPECT_NE(msg.find("U+0058 'X'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("byte offset 5"), std::string::npos) << msg;
  const std::string msg2 = error_of([&] { tok.encode("a\xE2\x82\xAC"); });  // €
  EXPECT_NE(msg2.find("U+20AC"), std::string::npos) << msg2;
  EXPECT_NE(msg2.find("byte offset 1"), std::string::npos) << msg2;
}

TEST(CharTokenizer, InvalidUtf8IsAnError) {
  const std::string msg = error_of([] { CharTokenizer::build("ab\xFF"); });
  EXPECT_NE(msg.find("invalid UTF-8"), std::string::npos) << msg;
  EXPECT_NE(msg.find("offset 2"), std::string::npos) << msg;
  const CharTokenizer tok = CharTokenizer::build("ab");
  EXPECT_NE(error_of([&] { tok.encode("a\xC3"); }).find("invalid UTF-8"), std::string::npos);
}

TEST(CharTokenizer, DecodeRejectsIdOutOfRange) {
  const CharTokenizer tok = CharTokenizer::build("ab");
  const std::vector<TokenId> ids = {0, 1, 2};
  const std::string msg = error_of([&] { tok.decode(ids); });
  EXPECT_NE(msg.find("id 2 at position 2"), std::string::npos) << msg;
}

TEST(CharTokenizer, MalformedMetaErrorsNameTheFile) {
  const auto dir = temp_dir("char_bad");
  const auto path = dir / "meta.json";
  struct Case {
    const char* json;
    const char* expect;
  };
  const Case cases[] = {
      {"{not json", "not valid JSON"},
      {"[1, 2]", "expected a JSON object"},
      {R"({"itos": {}, "stoi": {}})", "missing key \"vocab_size\""},
      {R"({"vocab_size": 2, "itos": {"0": "a"}, "stoi": {"a": 0}})", "itos must be an object"},
      {R"({"vocab_size": 1, "itos": {"0": "ab"}, "stoi": {"ab": 0}})", "exactly one character"},
      {R"({"vocab_size": 2, "itos": {"0": "a", "1": "b"}, "stoi": {"a": 0, "b": 0}})",
       "stoi[\"b\"] should be 1"},
      {R"({"vocab_size": 2, "itos": {"0": "a", "2": "b"}, "stoi": {"a": 0, "b": 1}})",
       "itos has no entry \"1\""},
      {R"({"vocab_size": 2, "itos": {"0": "a", "1": "a"}, "stoi": {"a": 0, "b": 1}})",
       "should be 1"},
      {R"({"vocab_size": -3, "itos": {}, "stoi": {}})", "positive integer"},
      {R"({"tokenizer": "bpe", "vocab_size": 1, "itos": {"0": "a"}, "stoi": {"a": 0}})",
       "unknown tokenizer \"bpe\""},
  };
  for (const Case& c : cases) {
    write_file(path, c.json);
    const std::string msg = error_of([&] { load_tokenizer(dir); });
    EXPECT_NE(msg.find(c.expect), std::string::npos) << c.json << " -> " << msg;
    EXPECT_NE(msg.find(path.string()), std::string::npos) << msg;
  }
  std::filesystem::remove(path);
  const std::string missing = error_of([&] { load_tokenizer(dir); });
  EXPECT_NE(missing.find("meta.json"), std::string::npos) << missing;
  EXPECT_NE(missing.find("prepare"), std::string::npos) << missing;
}

TEST(CodePointSet, CollectsInPiecesWhatBuildFindsInTheWhole) {
  const std::string text = "na\xc3\xafve caf\xc3\xa9 \xe2\x82\xac 5\n\xf0\x9f\x98\x80 zz";
  CodePointSet a, b;
  EXPECT_EQ(a.add(text.substr(0, 9)), 9u);  // "na\xc3\xafve ca": cut between characters
  EXPECT_EQ(b.add(text.substr(9)), text.size() - 9);
  a.merge(b);
  EXPECT_EQ(a.sorted(), CharTokenizer::build(text).chars());
  EXPECT_EQ(a.size(), CharTokenizer::build(text).chars().size());
  // The offset of the first invalid byte; what came before it is kept.
  CodePointSet c;
  EXPECT_EQ(c.add("ab\xff"
                  "c"),
            2u);
  EXPECT_EQ(c.sorted(), (std::vector<char32_t>{U'a', U'b'}));
  EXPECT_EQ(CodePointSet().add("x\xe2\x82"), 1u);  // a character cut short
}

}  // namespace
}  // namespace nanogpt
