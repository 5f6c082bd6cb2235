// read_dataset_meta, split_files, dropout_seed_for (run_inputs.h).
#include "train/run_inputs.h"

#include <filesystem>
#include <fstream>

#include "core/check.h"
#include "core/rng.h"
#include "data/dataset_files.h"

namespace nanogpt {

namespace fs = std::filesystem;

namespace {

nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(path);
  CHECK(in.good(), "cannot read '{}'", path);
  try {
    return nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    fail("'{}' is not valid JSON: {}", path, e.what());
  }
}

}  // namespace

nlohmann::json read_dataset_meta(const std::string& data_dir) {
  fs::path path = fs::path(data_dir) / "meta.json";
  if (!fs::exists(path)) return nullptr;
  return read_json_file(path.string());
}

std::vector<std::string> split_files(const std::string& data_dir, const std::string& split) {
  CHECK(fs::exists(fs::path(data_dir) / (split + ".bin")) || fs::is_directory(data_dir),
        "token file '{}' not found: dataset '{}' is not prepared yet; make it with {}, or point "
        "--dataset / --data_dir at a prepared one",
        (fs::path(data_dir) / (split + ".bin")).string(), data_dir, prepare_command_for(data_dir));
  return dataset_files(data_dir, split);
}

uint64_t dropout_seed_for(int64_t seed, int64_t iter, int64_t micro) {
  return splitmix64(splitmix64(static_cast<uint64_t>(seed) ^ 0x5eedull) ^
                    splitmix64(static_cast<uint64_t>(iter) * 1024 + static_cast<uint64_t>(micro)));
}

}  // namespace nanogpt
