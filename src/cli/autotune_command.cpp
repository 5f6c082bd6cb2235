// `nanogpt autotune`: the fastest micro-batch x accumulation split for a fixed step size
// (experiments/autotune).
#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "cli/commands.h"
#include "core/check.h"
#include "core/config.h"
#include "experiments/autotune.h"

namespace nanogpt::cli {

std::string autotune_help() {
  return "usage: nanogpt autotune [config files...] --tokens_per_step=N [--max_memory=SIZE]\n"
         "                        [--dtypes=float32,bfloat16] [--timed_steps=3] "
         "[--write_config=FILE] [train keys...]\n"
         "For N tokens per optimizer step (a multiple of block_size), tries every micro-batch x\n"
         "gradient accumulation split whose estimated peak memory fits --max_memory (e.g. 2GiB),\n"
         "times a warm-up plus --timed_steps steps of each, and prints ms per step, tokens/s, MFU\n"
         "and peak memory with the fastest marked. --write_config saves the winner as a config\n"
         "file for `nanogpt train`. Other keys: see `nanogpt help train`.\n";
}

int autotune_command(const Args& args) {
  AutotuneOptions options;
  std::string write_config;
  std::vector<ConfigAssignment> train_keys;
  for (const ConfigAssignment& a : parse_command_line(args)) {
    auto text = [&] {
      return std::holds_alternative<std::string>(a.value) ? std::get<std::string>(a.value)
                                                          : config_value_repr(a.value);
    };
    auto integer = [&] {
      CHECK(std::holds_alternative<int64_t>(a.value) && std::get<int64_t>(a.value) > 0,
            "{}: {} expects a positive integer", a.origin, a.key);
      return std::get<int64_t>(a.value);
    };
    if (a.key == "tokens_per_step") {
      options.tokens_per_step = integer();
    } else if (a.key == "timed_steps") {
      options.timed_steps = integer();
    } else if (a.key == "max_memory") {
      options.max_memory_bytes = parse_memory_size(text(), "max_memory");
    } else if (a.key == "dtypes") {
      std::string list = text();
      for (char& c : list) {
        if (c == ',') c = ' ';
      }
      std::istringstream in(list);
      std::string d;
      while (in >> d) options.dtypes.push_back(d);
    } else if (a.key == "write_config") {
      write_config = text();
    } else {
      train_keys.push_back(a);
    }
  }
  CHECK(options.tokens_per_step > 0,
        "autotune needs --tokens_per_step=N (tokens per optimizer step, a multiple of "
        "block_size), e.g. --tokens_per_step=8192");
  TrainConfig config;
  apply_assignments(config, train_keys);
  config.validate();
  config.resolve_auto_dtype();
  const AutotuneResult result = autotune(config, options);
  std::fputs(format_autotune(result, options).c_str(), stdout);
  if (!write_config.empty()) {
    TrainConfig best = autotune_winner_config(config, result);
    std::ofstream out(write_config, std::ios::trunc);
    CHECK(out.good(), "cannot write '{}' (write_config)", write_config);
    out << "# written by `nanogpt autotune` (tokens_per_step=" << options.tokens_per_step
        << "): the fastest split measured\n"
        << format_config(best);
    CHECK(out.good(), "error writing '{}'", write_config);
    fmt::print("wrote {}\n", write_config);
  }
  return result.best >= 0 ? 0 : 1;
}

}  // namespace nanogpt::cli
