// Tests of BlockReader and run_block_pipeline: blocks of any size hand out every document byte
// once, in order, with the right first/last flags and offsets, cuts only where the rule allows, the
// char corpus's separators; the pipeline consumes in reading order whatever the thread count, and
// an error in a worker stops it and reaches the caller.
#include "data/block_reader.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>

#include "core/check.h"
#include "data/block_pipeline.h"
#include "temp_dir.h"
#include "tokenizer/pretokenizer.h"

namespace nanogpt {
namespace {

using testing::TempDir;
namespace fs = std::filesystem;

struct Collected {
  std::vector<std::string> docs;  // each document's bytes, reassembled from its parts
  std::string corpus;             // every block's text in order (char: with separators)
  std::vector<std::string> origins;
  size_t blocks = 0;
  size_t largest_block = 0;
};

Collected collect(const std::vector<fs::path>& files, BlockCut cut, size_t block_bytes,
                  bool separators) {
  DocumentReaderOptions options;
  options.chunk_bytes = 5;
  DocumentReader docs(files, options);
  BlockReader reader(docs, cut, block_bytes, separators);
  Collected c;
  Block block;
  while (reader.next(block)) {
    ++c.blocks;
    c.largest_block = std::max(c.largest_block, block.text.size());
    c.corpus += block.text;
    size_t expect_begin = 0;
    for (const DocPart& p : block.parts) {
      EXPECT_GE(p.begin, expect_begin);
      if (separators) {
        EXPECT_LE(p.begin - expect_begin, 1u);  // at most one separator between parts
      } else {
        EXPECT_EQ(p.begin, expect_begin);
      }
      expect_begin = p.end;
      if (p.first) {
        EXPECT_EQ(p.doc_offset, 0);
        c.docs.emplace_back();
        c.origins.push_back(p.origin);
      }
      EXPECT_EQ(p.doc_offset, static_cast<int64_t>(c.docs.back().size()));
      EXPECT_EQ(p.origin, c.origins.back());
      c.docs.back() += block.text.substr(p.begin, p.end - p.begin);
      if (!p.last) {  // a document cut here goes on in the next block
        EXPECT_EQ(&p, &block.parts.back());
      }
    }
  }
  EXPECT_EQ(reader.documents(), static_cast<int64_t>(c.docs.size()));
  return c;
}

TEST(BlockReader, EveryByteOnceInOrderForAnyBlockSize) {
  TempDir dir;
  std::string long_doc;
  for (int i = 0; i < 300; ++i) long_doc += "word" + std::to_string(i) + (i % 7 ? " " : ".\n");
  testing::write_text(dir.file("a.txt"), long_doc);
  testing::write_text(dir.file("b.jsonl"),
                      "{\"text\": \"one\"}\n{\"text\": \"\"}\n{\"text\": \"two\\n\"}\n"
                      "{\"text\": \"caf\\u00e9 \\u4e2d\\u6587\\u3002end\"}\n");
  testing::write_text(dir.file("c.txt"), std::string(700, 'z'));  // no cut inside
  const std::vector<fs::path> files = {dir.file("a.txt"), dir.file("b.jsonl"), dir.file("c.txt")};
  const std::vector<std::string> expected = {long_doc,
                                             "one",
                                             "",
                                             "two\n",
                                             "caf\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87\xe3\x80\x82"
                                             "end",
                                             std::string(700, 'z')};
  for (BlockCut cut : {BlockCut::kPretoken, BlockCut::kCharacter}) {
    for (size_t block_bytes : {1, 2, 3, 7, 16, 100, 1000, 100000}) {
      SCOPED_TRACE(::testing::Message() << "block_bytes " << block_bytes << " cut "
                                        << (cut == BlockCut::kPretoken ? "pretoken" : "char"));
      Collected c = collect(files, cut, block_bytes, false);
      EXPECT_EQ(c.docs, expected);
      EXPECT_EQ(c.origins[1], dir.file("b.jsonl") + ":1");
      EXPECT_EQ(c.origins[3], dir.file("b.jsonl") + ":3");
      if (block_bytes >= 100) EXPECT_GT(c.blocks, long_doc.size() / (block_bytes + 200));
      // Only a piece with no cut in it (the 700 z's) makes a block larger than asked.
      EXPECT_LE(c.largest_block, std::max<size_t>(block_bytes, 700 + 8));
    }
  }
}

TEST(BlockReader, CutsFollowTheRule) {
  TempDir dir;
  std::string text;
  for (int i = 0; i < 200; ++i) text += "na\xc3\xafve " + std::to_string(i) + "'s \xe2\x82\xac, ";
  testing::write_text(dir.file("t.txt"), text);
  for (size_t block_bytes : {5, 9, 33}) {
    DocumentReader docs({dir.file("t.txt")}, {});
    BlockReader reader(docs, BlockCut::kPretoken, block_bytes, false);
    Block block;
    size_t offset = 0;
    while (reader.next(block)) {
      for (const DocPart& p : block.parts) {
        offset += p.end - p.begin;
        if (!p.last) {
          // The reader held at least 4 bytes past the cut: find_stream_cut must agree on it.
          const std::string_view prefix = std::string_view(text).substr(0, offset + 4);
          EXPECT_EQ(find_stream_cut(prefix, offset), offset) << "cut at " << offset;
        }
      }
    }
    EXPECT_EQ(offset, text.size());
  }
  DocumentReader docs({dir.file("t.txt")}, {});
  BlockReader reader(docs, BlockCut::kCharacter, 3, false);
  Block block;
  while (reader.next(block)) {
    for (const DocPart& p : block.parts) {
      if (p.end < block.text.size()) {
        EXPECT_NE(static_cast<unsigned char>(block.text[p.end]) & 0xC0, 0x80);
      }
      EXPECT_NE(static_cast<unsigned char>(block.text[p.begin]) & 0xC0, 0x80);
    }
  }
}

TEST(BlockReader, CharSeparatorsAsNanoGptConcatenates) {
  TempDir dir;
  testing::write_text(dir.file("a.txt"), "aa");
  testing::write_text(dir.file("b.txt"), "bb\n");
  testing::write_text(dir.file("c.txt"), "");
  testing::write_text(dir.file("d.txt"), "dd");
  testing::write_text(dir.file("e.txt"), "");
  const std::vector<fs::path> files = {dir.file("a.txt"), dir.file("b.txt"), dir.file("c.txt"),
                                       dir.file("d.txt"), dir.file("e.txt")};
  for (size_t block_bytes : {1, 2, 5, 1000}) {
    // '\n' after a document that does not end with one, unless it is the last.
    EXPECT_EQ(collect(files, BlockCut::kCharacter, block_bytes, true).corpus, "aa\nbb\ndd\n")
        << block_bytes;
  }
}

TEST(BlockPipeline, ConsumesInReadingOrderWithAnyThreadCount) {
  TempDir dir;
  std::string text;
  for (int i = 0; i < 2000; ++i) text += std::to_string(i) + " ";
  testing::write_text(dir.file("t.txt"), text);
  for (int threads : {1, 2, 3}) {
    for (int slots : {1, 2, 7}) {
      DocumentReader docs({dir.file("t.txt")}, {});
      BlockReader reader(docs, BlockCut::kPretoken, 37, false);
      std::string seen;
      std::atomic<int> max_worker{0};
      run_block_pipeline(
          reader, threads, slots,
          [&](int worker, const Block& block, std::vector<uint16_t>& tokens) {
            max_worker = std::max(max_worker.load(), worker);
            for (char c : block.text) tokens.push_back(static_cast<uint8_t>(c));
          },
          [&](const Block& block, std::span<const uint16_t> tokens) {
            EXPECT_EQ(tokens.size(), block.text.size());
            for (uint16_t t : tokens) seen += static_cast<char>(t);
          });
      EXPECT_EQ(seen, text) << threads << " threads, " << slots << " slots";
      EXPECT_LT(max_worker.load(), threads);
    }
  }
}

TEST(BlockPipeline, AWorkerErrorStopsItAndReachesTheCaller) {
  TempDir dir;
  std::string text;
  for (int i = 0; i < 5000; ++i) text += std::to_string(i) + " ";
  testing::write_text(dir.file("t.txt"), text);
  DocumentReader docs({dir.file("t.txt")}, {});
  BlockReader reader(docs, BlockCut::kPretoken, 50, false);
  int consumed = 0;
  try {
    run_block_pipeline(
        reader, 2, 4,
        [&](int, const Block& block, std::vector<uint16_t>&) {
          if (block.text.find("1000 ") != std::string::npos) fail("bad block");
        },
        [&](const Block&, std::span<const uint16_t>) { ++consumed; });
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "bad block");
  }
  // Blocks before the bad one were consumed, none after it.
  EXPECT_GT(consumed, 10);
  EXPECT_LT(consumed, 200);
}

}  // namespace
}  // namespace nanogpt
