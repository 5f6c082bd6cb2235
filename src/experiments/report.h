// `nanogpt report`: OUT_DIR/report.md (tables) and OUT_DIR/report.html (one self-contained page:
// the same tables plus interactive charts drawn by Apache ECharts, compiled into the binary, so
// the page opens offline and the command needs nothing at run time).
#pragma once

#include <string>

#include "experiments/report_data.h"

namespace nanogpt {

std::string report_markdown(const ReportData& data);
std::string report_html(const ReportData& data);

// True if this binary carries the chart library (scripts/setup.sh fetches it from npm before the
// build); without it report.html has the tables and says how to get the charts.
bool report_has_charts();

struct ReportPaths {
  std::string markdown, html;
};
// Loads out_dir's data and writes both files (atomically: a temporary file renamed into place).
ReportPaths write_report(const std::string& out_dir);

}  // namespace nanogpt
