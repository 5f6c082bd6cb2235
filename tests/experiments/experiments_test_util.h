// Helpers for the experiments tests: a small token dataset written directly (nanoGPT raw uint16
// .bin files and a meta.json), scratch directories, and running the built binary.
#pragma once

#include <array>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../e2e/e2e_util.h"

namespace nanogpt::experiments_test {

// A fresh scratch directory (e2e::scratch_dir's: named after the build and the CPU cap too).
inline std::string scratch_dir(const std::string& name) { return e2e::scratch_dir("exp_" + name); }

// train.bin / val.bin of `tokens` ids in [0, vocab) with a learnable pattern, and meta.json.
inline void write_dataset(const std::string& dir, int vocab = 64, int64_t tokens = 40000) {
  std::filesystem::create_directories(dir);
  for (const char* split : {"train", "val"}) {
    std::vector<uint16_t> ids(static_cast<size_t>(tokens));
    uint64_t x = split[0] == 't' ? 12345 : 777;
    for (auto& id : ids) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      // mostly a counting sequence, sometimes a random jump: a model can learn it quickly
      id = static_cast<uint16_t>(((x >> 60) == 0) ? (x >> 33) % vocab : 0);
    }
    for (size_t i = 1; i < ids.size(); ++i) {
      if (ids[i] == 0) ids[i] = static_cast<uint16_t>((ids[i - 1] + 1) % vocab);
    }
    std::ofstream out(dir + "/" + split + ".bin", std::ios::binary);
    out.write(reinterpret_cast<const char*>(ids.data()),
              static_cast<std::streamsize>(ids.size() * sizeof(uint16_t)));
  }
  std::ofstream(dir + "/meta.json") << "{\"vocab_size\": " << vocab << "}\n";
}

// Running the built binary: the end-to-end tests' helpers.
using e2e::RunResult;
using e2e::run_command;
using e2e::run_nanogpt;

inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace nanogpt::experiments_test
