// Tests of token files: nanoGPT raw and llm.c shard round trips, preload == mmap, and every
// validation error (missing, bad magic/version, size mismatch, odd bytes, too short, vocab).
#include "data/token_file.h"

#include <gtest/gtest.h>

#include <array>
#include <climits>
#include <cstring>
#include <numeric>
#include <vector>

#include "data/token_writer.h"
#include "temp_dir.h"

namespace nanogpt {
namespace {

using testing::TempDir;

std::vector<uint16_t> iota_tokens(size_t n, int mod = 1000) {
  std::vector<uint16_t> t(n);
  for (size_t i = 0; i < n; ++i) t[i] = static_cast<uint16_t>((i * 7 + 3) % mod);
  return t;
}

// Runs f and expects nanogpt::Error whose message contains every one of `parts`.
template <typename F>
void expect_error(F&& f, std::initializer_list<std::string> parts) {
  try {
    f();
    FAIL() << "expected nanogpt::Error";
  } catch (const Error& e) {
    std::string msg = e.what();
    for (const auto& p : parts)
      EXPECT_NE(msg.find(p), std::string::npos) << msg << "\nlacks: " << p;
  }
}

TEST(TokenFile, NanogptRoundTripBothModes) {
  TempDir dir;
  auto tokens = iota_tokens(5000);
  write_nanogpt_tokens(dir.file("a.bin"), tokens);
  EXPECT_EQ(testing::read_all(dir.file("a.bin")).size(), tokens.size() * 2);
  for (DataMode mode : {DataMode::kPreload, DataMode::kMmap}) {
    TokenFile f(dir.file("a.bin"), {.mode = mode});
    EXPECT_EQ(f.format(), TokenFormat::kNanogpt);
    ASSERT_EQ(f.size(), 5000);
    EXPECT_TRUE(std::equal(tokens.begin(), tokens.end(), f.tokens()));
    EXPECT_EQ(f.max_token(), 999);
  }
}

TEST(TokenFile, LlmcShardRoundTripBothModes) {
  TempDir dir;
  auto tokens = iota_tokens(3001, 50257);
  write_llmc_shard(dir.file("s.bin"), tokens);
  std::string bytes = testing::read_all(dir.file("s.bin"));
  ASSERT_EQ(bytes.size(), 1024 + 2 * tokens.size());
  std::array<int32_t, 256> header{};
  std::memcpy(header.data(), bytes.data(), 1024);
  EXPECT_EQ(header[0], 20240520);
  EXPECT_EQ(header[1], 1);
  EXPECT_EQ(header[2], 3001);
  for (int i = 3; i < 256; ++i) EXPECT_EQ(header[i], 0);
  for (DataMode mode : {DataMode::kPreload, DataMode::kMmap}) {
    TokenFile f(dir.file("s.bin"), {.mode = mode, .vocab_size = 50257});
    EXPECT_EQ(f.format(), TokenFormat::kLlmc);
    ASSERT_EQ(f.size(), 3001);
    EXPECT_TRUE(std::equal(tokens.begin(), tokens.end(), f.tokens()));
  }
}

TEST(TokenFile, MaxAndLocateAreExact) {
  std::vector<uint16_t> t(100003, 5);
  EXPECT_EQ(max_token_id(t.data(), static_cast<int64_t>(t.size())), 5);
  EXPECT_EQ(find_first_token_at_least(t.data(), static_cast<int64_t>(t.size()), 6), -1);
  t[77777] = 65535;
  t[90000] = 70;
  EXPECT_EQ(max_token_id(t.data(), static_cast<int64_t>(t.size())), 65535);
  EXPECT_EQ(find_first_token_at_least(t.data(), static_cast<int64_t>(t.size()), 6), 77777);
  EXPECT_EQ(max_token_id(t.data(), 0), 0);
}

TEST(TokenFileErrors, Missing) {
  TempDir dir;
  expect_error([&] { TokenFile f(dir.file("nope.bin"), {}); },
               {"nope.bin", "not found", "nanogpt prepare"});
}

TEST(TokenFileErrors, Empty) {
  TempDir dir;
  testing::write_text(dir.file("e.bin"), "");
  expect_error([&] { TokenFile f(dir.file("e.bin"), {}); }, {"e.bin", "empty"});
}

TEST(TokenFileErrors, OddByteCount) {
  TempDir dir;
  testing::write_text(dir.file("odd.bin"), "abcde");
  for (DataMode mode : {DataMode::kPreload, DataMode::kMmap}) {
    expect_error([&] { TokenFile f(dir.file("odd.bin"), {.mode = mode}); },
                 {"odd.bin", "odd byte count", "5"});
  }
}

TEST(TokenFileErrors, WrongVersion) {
  TempDir dir;
  std::vector<int32_t> h(256 + 4, 0);
  h[0] = 20240520;
  h[1] = 2;
  h[2] = 8;
  testing::write_bytes(dir.file("v.bin"), h.data(), h.size() * 4);
  expect_error([&] { TokenFile f(dir.file("v.bin"), {}); }, {"v.bin", "version 2", "expected 1"});
}

TEST(TokenFileErrors, WrongMagicWhenLlmcRequested) {
  TempDir dir;
  auto tokens = iota_tokens(2000);
  write_nanogpt_tokens(dir.file("raw.bin"), tokens);
  expect_error([&] { TokenFile f(dir.file("raw.bin"), {.format = TokenFormat::kLlmc}); },
               {"raw.bin", "bad magic", "20240520", "nanogpt"});
}

TEST(TokenFileErrors, LlmcModelFileIsNotTokens) {
  TempDir dir;
  std::vector<int32_t> h(256, 0);
  h[0] = 20240326;
  testing::write_bytes(dir.file("model.bin"), h.data(), h.size() * 4);
  expect_error([&] { TokenFile f(dir.file("model.bin"), {}); }, {"model.bin", "model file"});
}

TEST(TokenFileErrors, SizeDoesNotMatchHeader) {
  TempDir dir;
  auto tokens = iota_tokens(100);
  write_llmc_shard(dir.file("t.bin"), tokens);
  std::string bytes = testing::read_all(dir.file("t.bin"));
  bytes.resize(bytes.size() - 2);  // truncated by one token
  testing::write_text(dir.file("t.bin"), bytes);
  expect_error([&] { TokenFile f(dir.file("t.bin"), {}); },
               {"t.bin", "1222 bytes", "token count 100", "1224"});
  testing::write_text(dir.file("h.bin"), bytes.substr(0, 600));  // truncated header
  expect_error([&] { TokenFile f(dir.file("h.bin"), {}); }, {"h.bin", "header", "truncated"});
}

TEST(TokenFileErrors, TooFewTokens) {
  TempDir dir;
  write_nanogpt_tokens(dir.file("short.bin"), iota_tokens(64));
  TokenFile ok(dir.file("short.bin"), {.min_tokens = 64});
  expect_error([&] { TokenFile f(dir.file("short.bin"), {.min_tokens = 65}); },
               {"short.bin", "64 tokens", "65", "block_size"});
}

TEST(TokenFileErrors, TokenAboveVocabNamesOffset) {
  TempDir dir;
  auto tokens = iota_tokens(20000, 65);
  tokens[12345] = 65;
  tokens[15000] = 300;
  write_nanogpt_tokens(dir.file("raw.bin"), tokens);
  write_llmc_shard(dir.file("shard.bin"), tokens);
  for (DataMode mode : {DataMode::kPreload, DataMode::kMmap}) {
    expect_error([&] { TokenFile f(dir.file("raw.bin"), {.mode = mode, .vocab_size = 65}); },
                 {"raw.bin", "token id 65", "offset 12345", "byte 24690", "vocab_size 65", "300"});
    expect_error([&] { TokenFile f(dir.file("shard.bin"), {.mode = mode, .vocab_size = 65}); },
                 {"shard.bin", "offset 12345", "byte 25714"});
  }
  TokenFile ok(dir.file("raw.bin"), {.vocab_size = 301});
  EXPECT_EQ(ok.max_token(), 300);
}

TEST(TokenFile, ForcedNanogptReadsShardBytesRaw) {
  TempDir dir;
  write_llmc_shard(dir.file("s.bin"), iota_tokens(10));
  TokenFile f(dir.file("s.bin"), {.format = TokenFormat::kNanogpt});
  EXPECT_EQ(f.size(), 512 + 10);
}

TEST(TokenFile, ParseNames) {
  EXPECT_EQ(parse_token_format("llmc"), TokenFormat::kLlmc);
  EXPECT_EQ(parse_data_mode("mmap"), DataMode::kMmap);
  EXPECT_THROW(parse_data_mode("disk"), Error);
  EXPECT_THROW(parse_token_format("hf"), Error);
}

// Regression test for the fuzzing brief (fuzz/token_file_fuzz.cpp): a header claiming a huge token
// count fails on the size check, before any buffer is sized from the count.
TEST(TokenFileFuzzRegression, HugeCountInHeaderFailsBeforeAllocation) {
  TempDir dir;
  std::array<int32_t, 256> header{};
  header[0] = kLlmcShardMagic;
  header[1] = kLlmcShardVersion;
  for (const int32_t count : {INT32_MAX, -4}) {
    header[2] = count;
    testing::write_bytes(dir.file("s.bin"), header.data(), sizeof(header));
    for (const DataMode mode : {DataMode::kPreload, DataMode::kMmap}) {
      TokenFileOptions o;
      o.mode = mode;
      expect_error([&] { TokenFile f(dir.file("s.bin"), o); },
                   {"s.bin", "1024 bytes", "token count " + std::to_string(count)});
    }
  }
}

}  // namespace
}  // namespace nanogpt
