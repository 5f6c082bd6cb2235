// dataset_files: which token files make up a dataset split ("train" or "val") in a data directory,
// so the trainer can build its train and val DataLoaders from one data_dir.
#pragma once

#include <string>
#include <vector>

namespace nanogpt {

// data_dir/<split>.bin if it exists (what `nanogpt prepare` writes); else every regular file in
// data_dir whose name ends in ".bin" and contains "_<split>_" or starts with "<split>_" (llm.c
// shards such as fineweb_train_000001.bin, train_000000.bin), sorted by name. Throws
// nanogpt::Error naming data_dir if there are none.
std::vector<std::string> dataset_files(const std::string& data_dir, const std::string& split);

}  // namespace nanogpt
