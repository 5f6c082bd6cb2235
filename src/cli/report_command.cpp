// `nanogpt report OUT_DIR`: report.md and report.html for a sweep or a training run
// (experiments/report).
#include <fmt/format.h>

#include "cli/commands.h"
#include "core/check.h"
#include "experiments/report.h"

namespace nanogpt::cli {

std::string report_help() {
  return "usage: nanogpt report OUT_DIR\n"
         "Writes OUT_DIR/report.md and OUT_DIR/report.html (one self-contained page that opens\n"
         "offline) for the out_dir of `nanogpt sweep` (seed 004's Table 1, Figures 4 and 5, loss\n"
         "curves, time to target) or of `nanogpt train` (its loss curves). Works on runs that are\n"
         "still going: it reads metrics.jsonl as it is.\n";
}

int report_command(const Args& args) {
  CHECK(args.size() == 1 && args[0].rfind("--", 0) != 0,
        "usage: nanogpt report OUT_DIR (the out_dir of a sweep or of a training run)");
  const ReportPaths paths = write_report(args[0]);
  fmt::print("wrote {} and {}{}\n", paths.markdown, paths.html,
             report_has_charts() ? "" : " (without charts: this build has no chart library)");
  return 0;
}

}  // namespace nanogpt::cli
