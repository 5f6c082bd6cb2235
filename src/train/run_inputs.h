// What a training run reads besides its config, the same on every device (train/trainer.cpp): the dataset's meta.json, the token files of a split, and the
// dropout seed of each micro-step (so masks, hence losses, match across devices and on resume).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace nanogpt {

// The dataset's meta.json (vocab size, tokenizer), or null if the dataset has none; throws
// nanogpt::Error naming the file when it is not valid JSON.
nlohmann::json read_dataset_meta(const std::string& data_dir);

// The token files of `split` ("train" or "val") in data_dir (data/dataset_files.h); throws
// nanogpt::Error saying how to prepare the dataset when there are none.
std::vector<std::string> split_files(const std::string& data_dir, const std::string& split);

// The dropout seed of micro-step `micro` (counted over all ranks) of iteration `iter`.
uint64_t dropout_seed_for(int64_t seed, int64_t iter, int64_t micro);

}  // namespace nanogpt
