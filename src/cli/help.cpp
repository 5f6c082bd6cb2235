// Shared CLI helpers: detecting --help, and the message of a command that needs a checkpoint
// where no run has written one yet.
#include <algorithm>
#include <filesystem>

#include "cli/commands.h"
#include "core/check.h"
#include "train/trainer.h"

namespace nanogpt::cli {

bool wants_help(const Args& args) {
  return std::any_of(args.begin(), args.end(),
                     [](const std::string& a) { return a == "--help" || a == "-h"; });
}

void require_checkpoint(const std::string& init_from, const std::string& out_dir,
                        const char* command) {
  if (init_from != "resume") return;
  const std::string dir = checkpoint_dir_of(out_dir);
  std::error_code ec;
  CHECK(std::filesystem::exists(dir, ec) || std::filesystem::exists(dir + ".old", ec),
        "no checkpoint in out_dir '{}' (no {}): train one first (`nanogpt train "
        "config/train_shakespeare_char_cpu.py` writes out-shakespeare-char-cpu/ckpt), then `nanogpt "
        "{} --out_dir=<that run's out_dir>`; or read a model file with --init_from=FILE",
        out_dir, dir, command);
}

}  // namespace nanogpt::cli
