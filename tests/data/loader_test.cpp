// Tests of DataLoader: per-seed determinism, exact sequential (llm.c) semantics, disjoint rank
// streams, state save/restore and skip, preload == mmap, several shards, and config errors.
#include "data/loader.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <vector>

#include "data/dataset_files.h"
#include "data/token_writer.h"
#include "temp_dir.h"

namespace nanogpt {
namespace {

using testing::TempDir;

// Token i has value i % 60000: a batch row tells where it came from.
std::vector<uint16_t> position_tokens(size_t n) {
  std::vector<uint16_t> t(n);
  for (size_t i = 0; i < n; ++i) t[i] = static_cast<uint16_t>(i % 60000);
  return t;
}

struct Batch {
  std::vector<int32_t> x, y;
  bool operator==(const Batch&) const = default;
};

Batch next(DataLoader& loader) {
  Batch b;
  size_t n = static_cast<size_t>(loader.batch_size() * loader.block_size());
  b.x.resize(n);
  b.y.resize(n);
  loader.next_batch(b.x.data(), b.y.data());
  return b;
}

LoaderConfig config(const std::string& sampling, int64_t B, int64_t T, int64_t seed = 1337) {
  LoaderConfig c;
  c.sampling = sampling;
  c.batch_size = B;
  c.block_size = T;
  c.seed = seed;
  return c;
}

TEST(Loader, RandomIsDeterministicPerSeedAndRowsAreShifted) {
  TempDir dir;
  const int64_t N = 10000, B = 4, T = 32;
  write_nanogpt_tokens(dir.file("d.bin"), position_tokens(N));
  DataLoader a(dir.file("d.bin"), config("random", B, T, 7));
  DataLoader b(dir.file("d.bin"), config("random", B, T, 7));
  DataLoader c(dir.file("d.bin"), config("random", B, T, 8));
  bool differs = false;
  for (int k = 0; k < 20; ++k) {
    Batch ba = next(a), bb = next(b), bc = next(c);
    EXPECT_EQ(ba, bb);
    differs = differs || !(ba == bc);
    for (int64_t r = 0; r < B; ++r) {
      int32_t start = ba.x[r * T];
      EXPECT_GE(start, 0);
      EXPECT_LE(start, N - T - 1);  // nanoGPT: randint(len(data) - block_size)
      for (int64_t t = 0; t < T; ++t) {
        EXPECT_EQ(ba.x[r * T + t], start + t);
        EXPECT_EQ(ba.y[r * T + t], start + t + 1);
      }
    }
  }
  EXPECT_TRUE(differs);
}

TEST(Loader, RandomCoversTheWholeRangeIncludingTheLastStart) {
  TempDir dir;
  const int64_t N = 40, T = 8;  // valid starts 0..31
  write_nanogpt_tokens(dir.file("d.bin"), position_tokens(N));
  DataLoader loader(dir.file("d.bin"), config("random", 16, T));
  std::set<int32_t> starts;
  for (int k = 0; k < 200; ++k) {
    Batch b = next(loader);
    for (int r = 0; r < 16; ++r) starts.insert(b.x[r * T]);
  }
  EXPECT_EQ(starts.size(), 32u);
  EXPECT_EQ(*starts.begin(), 0);
  EXPECT_EQ(*starts.rbegin(), 31);
}

TEST(Loader, SequentialSemanticsExactly) {
  TempDir dir;
  const int64_t B = 2, T = 5, N = 37;  // batches at 0, 10, 20; 30 + 11 > 37 wraps
  write_nanogpt_tokens(dir.file("d.bin"), position_tokens(N));
  DataLoader loader(dir.file("d.bin"), config("sequential", B, T));
  const int64_t expected_pos[] = {0, 10, 20, 0, 10, 20, 0};
  for (int64_t pos : expected_pos) {
    EXPECT_EQ(loader.state().pos, pos);
    Batch b = next(loader);
    for (int64_t i = 0; i < B * T; ++i) {
      EXPECT_EQ(b.x[i], pos + i);
      EXPECT_EQ(b.y[i], pos + i + 1);
    }
  }
}

TEST(Loader, SequentialUsesTheLastTokenWhenItFitsExactly) {
  TempDir dir;
  write_nanogpt_tokens(dir.file("d.bin"), position_tokens(21));  // exactly 2 batches of 10 + 1
  DataLoader loader(dir.file("d.bin"), config("sequential", 2, 5));
  next(loader);
  Batch b = next(loader);
  EXPECT_EQ(b.y.back(), 20);
  EXPECT_EQ(loader.state().pos, 0);
}

TEST(Loader, SequentialRanksAreDisjointAndCoverTheStep) {
  TempDir dir;
  const int64_t B = 2, T = 4, W = 3, N = 24 * 5 + 7;
  write_nanogpt_tokens(dir.file("d.bin"), position_tokens(N));
  std::vector<DataLoader> ranks;
  for (int r = 0; r < W; ++r) {
    LoaderConfig c = config("sequential", B, T);
    c.rank = r;
    c.world_size = W;
    ranks.emplace_back(dir.file("d.bin"), c);
  }
  for (int step = 0; step < 12; ++step) {
    std::set<int32_t> seen;
    for (int r = 0; r < W; ++r) {
      Batch b = next(ranks[r]);
      EXPECT_EQ(b.x[0], (step % 5) * W * B * T + r * B * T) << "step " << step << " rank " << r;
      for (int32_t v : b.x) EXPECT_TRUE(seen.insert(v).second) << "token " << v << " twice";
    }
    EXPECT_EQ(seen.size(), static_cast<size_t>(W * B * T));
  }
}

TEST(Loader, RandomRankStreamsDiffer) {
  TempDir dir;
  write_nanogpt_tokens(dir.file("d.bin"), position_tokens(50000));
  LoaderConfig c0 = config("random", 8, 16, 1337), c1 = c0, c2 = config("random", 8, 16, 1338);
  c1.rank = 1;
  c1.world_size = 2;
  c0.world_size = 2;
  DataLoader r0(dir.file("d.bin"), c0), r1(dir.file("d.bin"), c1), s2(dir.file("d.bin"), c2);
  int same01 = 0, same02 = 0;
  for (int k = 0; k < 50; ++k) {
    Batch a = next(r0), b = next(r1), c = next(s2);
    for (int r = 0; r < 8; ++r) {
      same01 += a.x[r * 16] == b.x[r * 16];
      same02 += a.x[r * 16] == c.x[r * 16];
    }
  }
  EXPECT_LT(same01, 5);  // independent draws from ~50000 starts
  EXPECT_LT(same02, 5);  // (seed 1337, rank 1) differs from (seed 1338, rank 0)
}

TEST(Loader, StateRestoreGivesIdenticalFollowingBatches) {
  TempDir dir;
  write_nanogpt_tokens(dir.file("d.bin"), position_tokens(3000));
  for (const char* sampling : {"random", "sequential"}) {
    DataLoader a(dir.file("d.bin"), config(sampling, 4, 16, 99));
    for (int k = 0; k < 13; ++k) next(a);
    nlohmann::json saved = a.state().to_json();
    std::string text = saved.dump();
    std::vector<Batch> expected;
    for (int k = 0; k < 40; ++k) expected.push_back(next(a));

    DataLoader b(dir.file("d.bin"), config(sampling, 4, 16, 99));
    b.set_state(LoaderState::from_json(nlohmann::json::parse(text), "test"));
    EXPECT_EQ(b.state().batches, 13);
    for (int k = 0; k < 40; ++k) EXPECT_EQ(next(b), expected[k]) << sampling << " batch " << k;

    DataLoader c(dir.file("d.bin"), config(sampling, 4, 16, 99));  // replay by count
    c.skip(13);
    EXPECT_EQ(c.state(), LoaderState::from_json(nlohmann::json::parse(text), "test"));
    EXPECT_EQ(next(c), expected[0]);

    a.reset();  // back to the start: equals a fresh loader
    DataLoader fresh(dir.file("d.bin"), config(sampling, 4, 16, 99));
    EXPECT_EQ(next(a), next(fresh));
  }
}

TEST(Loader, StateErrors) {
  TempDir dir;
  write_nanogpt_tokens(dir.file("d.bin"), position_tokens(3000));
  DataLoader a(dir.file("d.bin"), config("sequential", 4, 16));
  LoaderState s = a.state();
  s.pos = 5;
  EXPECT_THROW(a.set_state(s), Error);
  s = a.state();
  s.batch_size = 8;
  EXPECT_THROW(a.set_state(s), Error);
  s = a.state();
  s.rank = 1;
  EXPECT_THROW(a.set_state(s), Error);
  EXPECT_THROW(LoaderState::from_json(nlohmann::json{{"pos", 1}}, "ckpt/state.json"), Error);
  nlohmann::json bad = a.state().to_json();
  bad["rng"][0] = "xyz";
  EXPECT_THROW(LoaderState::from_json(bad, "ckpt/state.json"), Error);
}

TEST(Loader, PreloadEqualsMmap) {
  TempDir dir;
  write_llmc_shard(dir.file("s.bin"), position_tokens(20000));
  for (const char* sampling : {"random", "sequential"}) {
    LoaderConfig cp = config(sampling, 8, 64), cm = cp;
    cm.data_mode = "mmap";
    DataLoader p(dir.file("s.bin"), cp), m(dir.file("s.bin"), cm);
    for (int k = 0; k < 50; ++k) EXPECT_EQ(next(p), next(m)) << sampling << " batch " << k;
  }
}

TEST(Loader, SeveralShards) {
  TempDir dir;
  std::vector<uint16_t> a(31), b(41);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint16_t>(1000 + i);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint16_t>(2000 + i);
  write_llmc_shard(dir.file("train_000000.bin"), a);
  write_llmc_shard(dir.file("train_000001.bin"), b);
  std::vector<std::string> paths = {dir.file("train_000000.bin"), dir.file("train_000001.bin")};
  // Sequential (B*T = 10): shard 0 at 0, 10, 20; shard 1 at 0, 10, 20, 30; then shard 0 again.
  DataLoader seq(paths, config("sequential", 2, 5));
  const int32_t starts[] = {1000, 1010, 1020, 2000, 2010, 2020, 2030, 1000};
  for (int32_t s : starts) {
    Batch x = next(seq);
    EXPECT_EQ(x.x[0], s);
    EXPECT_EQ(x.y[9], s + 10);
  }
  // Random: rows never straddle shards; both shards and their last starts are reached.
  DataLoader rnd(paths, config("random", 8, 5));
  std::set<int32_t> starts_seen;
  for (int k = 0; k < 300; ++k) {
    Batch x = next(rnd);
    for (int r = 0; r < 8; ++r) {
      int32_t s = x.x[r * 5];
      starts_seen.insert(s);
      EXPECT_EQ(x.y[r * 5 + 4], s + 5);
    }
  }
  EXPECT_EQ(starts_seen.size(), static_cast<size_t>((31 - 5) + (41 - 5)));
  EXPECT_TRUE(starts_seen.count(1025) && starts_seen.count(2035));
}

TEST(Loader, ConfigAndSizeErrors) {
  TempDir dir;
  write_nanogpt_tokens(dir.file("d.bin"), position_tokens(100));
  LoaderConfig c = config("shuffled", 2, 8);
  EXPECT_THROW(DataLoader(dir.file("d.bin"), c), Error);
  c = config("random", 2, 100);  // needs 101 tokens
  EXPECT_THROW(DataLoader(dir.file("d.bin"), c), Error);
  c = config("sequential", 10, 10);  // needs 101 tokens
  try {
    DataLoader loader(dir.file("d.bin"), c);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("world_size * batch_size * block_size"), std::string::npos)
        << e.what();
  }
  c = config("random", 2, 8);
  c.rank = 2;
  c.world_size = 2;
  EXPECT_THROW(DataLoader(dir.file("d.bin"), c), Error);
  c = config("random", 2, 8);
  c.vocab_size = 50;  // tokens go up to 99
  EXPECT_THROW(DataLoader(dir.file("d.bin"), c), Error);
}

TEST(DatasetFiles, SingleFileOrSortedShards) {
  TempDir dir;
  std::filesystem::create_directories(dir.file("a"));
  write_nanogpt_tokens(dir.file("a/train.bin"), position_tokens(10));
  EXPECT_EQ(dataset_files(dir.file("a"), "train"),
            std::vector<std::string>{dir.file("a/train.bin")});
  EXPECT_THROW(dataset_files(dir.file("a"), "val"), Error);
  EXPECT_THROW(dataset_files(dir.file("missing"), "val"), Error);
  for (const char* f :
       {"fw_train_000002.bin", "fw_train_000001.bin", "fw_val_000000.bin", "notes.txt"}) {
    testing::write_text(dir.file(std::string("b/") + f), "xx");
  }
  EXPECT_EQ(dataset_files(dir.file("b"), "train"),
            (std::vector<std::string>{dir.file("b/fw_train_000001.bin"),
                                      dir.file("b/fw_train_000002.bin")}));
  EXPECT_EQ(dataset_files(dir.file("b"), "val"),
            std::vector<std::string>{dir.file("b/fw_val_000000.bin")});
}

// Regression tests from fuzzing (fuzz/checkpoint_state_fuzz.cpp): a loader state from state.json
// is read strictly (nlohmann's get<int> truncated 2^40 and converted floats, 1e300 undefined
// behaviour; stoull read "-1" as 2^64 - 1 and "1e3" as 1), and restoring a position near
// INT64_MAX is an error rather than a signed overflow.
TEST(LoaderFuzzRegression, StateFromJsonIsStrict) {
  TempDir dir;
  write_nanogpt_tokens(dir.file("d.bin"), position_tokens(3000));
  DataLoader a(dir.file("d.bin"), config("sequential", 4, 16));
  const nlohmann::json good = a.state().to_json();
  EXPECT_EQ(LoaderState::from_json(good, "s.json"), a.state());
  auto bad = [&](const char* key, const nlohmann::json& v, const std::string& needle) {
    nlohmann::json j = good;
    j[key] = v;
    try {
      LoaderState::from_json(j, "ckpt/state.json");
      ADD_FAILURE() << key << " = " << v.dump() << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("ckpt/state.json"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  for (const char* word : {"-1", "1e3", " 1", "18446744073709551616", "", "0x10"}) {
    bad("rng", {word, "1", "2", "3"}, "decimal uint64 string");
  }
  bad("rng", {1, 2, 3, 4}, "decimal uint64 string");
  bad("rng", {"0", "0", "0", "0"}, "all 0");
  bad("rng", {"1", "2"}, "must be 4 words");
  bad("world_size", int64_t{1} << 40, "'world_size' must be an integer");
  bad("world_size", 1.5, "'world_size' must be an integer");
  bad("pos", 1e300, "'pos' must be an integer");
  bad("pos", -1, "'pos' must be an integer in 0..");
  bad("rank", 1, "'rank' must be an integer in 0..0");
  bad("batches", "7", "'batches' must be an integer");
  EXPECT_THROW(LoaderState::from_json(nlohmann::json::array(), "s.json"), Error);

  LoaderState s = a.state();
  s.pos = INT64_MAX;  // base + step + 1 overflowed
  EXPECT_THROW(a.set_state(s), Error);
  s.pos = 46 * 64;  // a batch start whose batch (and its next token) passes the end: 2944 + 65
  EXPECT_THROW(a.set_state(s), Error);
  s.pos = 45 * 64;  // the last one that fits
  a.set_state(s);
}

}  // namespace
}  // namespace nanogpt
