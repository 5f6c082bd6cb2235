// dataset_files: which token files make up a dataset split ("train" or "val") in a data directory,
// so the trainer can build its train and val DataLoaders from one data_dir.
#pragma once

#include <string>
#include <vector>

namespace nanogpt {

// Present in a data directory while `nanogpt prepare` puts its files in place (and after a prepare
// killed then): the files there may be a mix of two runs, so dataset_files refuses the directory.
inline constexpr const char* kPrepareIncompleteMarker = "prepare.incomplete";

// data_dir/<split>.bin if it exists (what `nanogpt prepare` writes); else every regular file in
// data_dir whose name ends in ".bin" and contains "_<split>_" or starts with "<split>_" (llm.c
// shards such as fineweb_train_000001.bin, train_000000.bin), sorted by name. Throws
// nanogpt::Error naming data_dir if there are none, or if data_dir holds kPrepareIncompleteMarker.
std::vector<std::string> dataset_files(const std::string& data_dir, const std::string& split);

// The command that makes data_dir, for the messages of a dataset not prepared yet: the quickstart
// and tinyshakespeare's own for brown_char and shakespeare_char, else `nanogpt prepare` with the
// tokenizer a name like nanoGPT's suggests (*_char: char, others: gpt2) and a placeholder input.
std::string prepare_command_for(const std::string& data_dir);

}  // namespace nanogpt
