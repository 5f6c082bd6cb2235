// `nanogpt prepare`: tokenize a corpus once into train.bin / val.bin / meta.json.
#include <fmt/format.h>

#include "cli/commands.h"
#include "core/config.h"
#include "data/prepare.h"
#include "data/prepare_config.h"

namespace nanogpt::cli {

std::string prepare_help() {
  return "usage: nanogpt prepare --tokenizer=char|gpt2 --input=PATH[,PATH...] --out_dir=DIR "
         "[--val_fraction=0.1] [--format=nanogpt|llmc] [--memory_budget=1G]\n"
         "Inputs: text files, directories of text files (recursive, sorted), .jsonl files with a\n"
         "\"text\" field, and gzip-compressed versions of each (.txt.gz, .jsonl.gz); each file or\n"
         "JSONL line is one document. The input streams through in blocks: memory stays within\n"
         "memory_budget whatever the corpus size. Keys:\n" +
         format_keys_help(describe_keys<PrepareConfig>());
}

int prepare_command(const Args& args) {
  PrepareConfig config;
  apply_assignments(config, parse_command_line(args));  // run_prepare validates
  PrepareReport report = run_prepare(config);
  fmt::print("{}", report.summary());
  return 0;
}

}  // namespace nanogpt::cli
