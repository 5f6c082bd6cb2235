// Helpers for the io tests: a self-removing temporary directory, small model configs, parameter
// arenas filled with distinct values, and error-message matching.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "core/check.h"
#include "model/params.h"

namespace nanogpt::testing {

class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = (std::filesystem::temp_directory_path() /
             ("nanogpt_io_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++)))
                .string();
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline ModelConfig small_config(bool bias = true) {
  ModelConfig c;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 16;
  c.block_size = 8;
  c.vocab_size = 70;  // padded to 128
  c.bias = bias;
  return c;
}

// Distinct, exactly representable values per element; padded wte rows and arena gaps are 0.
inline std::vector<float> make_params(const ModelConfig& config, const ParamTable& table,
                                      float salt = 0.0f) {
  std::vector<float> p(static_cast<size_t>(table.total_numel()), 0.0f);
  for (const auto& s : table.specs()) {
    int64_t n = s.numel;
    if (s.name == "wte.weight") n = static_cast<int64_t>(config.vocab_size) * s.shape[1];
    for (int64_t i = 0; i < n; ++i) {
      p[s.offset + i] = static_cast<float>(std::sin(0.001 * (s.offset + i) + salt)) + 0.5f;
    }
  }
  return p;
}

// Runs fn, expects nanogpt::Error whose message contains every needle.
template <typename Fn>
void expect_error(Fn&& fn, const std::vector<std::string>& needles) {
  try {
    fn();
    ADD_FAILURE() << "expected an error mentioning '" << needles.front() << "'";
  } catch (const Error& e) {
    const std::string what = e.what();
    for (const auto& n : needles) {
      EXPECT_NE(what.find(n), std::string::npos) << "missing '" << n << "' in: " << what;
    }
  }
}

}  // namespace nanogpt::testing
