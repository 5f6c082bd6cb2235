// Helpers for end-to-end tests: run the built `nanogpt` binary in a scratch directory and read
// what it wrote.
#pragma once

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace nanogpt::e2e {

struct RunResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs the shell command `command` with the working directory `cwd`.
inline RunResult run_command(const std::string& cwd, const std::string& command) {
  std::string cmd = "cd '" + cwd + "' && " + command + " 2>&1";
  RunResult r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), n);
  int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// Runs `nanogpt <args>` with the working directory `cwd`.
inline RunResult run_nanogpt(const std::string& cwd, const std::string& args) {
  return run_command(cwd, "OMP_NUM_THREADS=2 '" + std::string(NANOGPT_BINARY) + "' " + args);
}

// A fresh scratch directory for one test.
// Named after the build directory too, so test suites of several checkouts can run at once.
inline std::string scratch_dir(const std::string& name) {
  const size_t build = std::hash<std::string>{}(NANOGPT_BUILD_DIR) % 100000;
  auto dir = std::filesystem::temp_directory_path() /
             ("nanogpt_e2e_" + std::to_string(build) + "_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

inline std::string shakespeare_path() {
  return std::string(NANOGPT_SHARED_DIR) + "/data/tinyshakespeare.txt";
}

inline std::vector<nlohmann::json> read_jsonl(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  }
  return out;
}

}  // namespace nanogpt::e2e
