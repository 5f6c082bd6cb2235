// Shared CLI helpers: detecting --help and formatting a command's key table.
#include <algorithm>

#include "cli/commands.h"

namespace nanogpt::cli {

bool wants_help(const Args& args) {
  return std::any_of(args.begin(), args.end(),
                     [](const std::string& a) { return a == "--help" || a == "-h"; });
}

}  // namespace nanogpt::cli
