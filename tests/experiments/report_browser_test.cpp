// report.html in a real browser: the smoke sweep's report is loaded in headless Chromium (Debian's
// `chromium`, installed by scripts/setup.sh); the page must log no script or console errors and
// every chart container must hold a chart that ECharts drew (its own display-list count > 0),
// as the page records into the DOM that Chromium dumps after running it.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "experiments_test_util.h"

namespace nanogpt {
namespace {

namespace fs = std::filesystem;
using namespace experiments_test;

std::string chromium_path() {
  for (const char* p : {"/usr/bin/chromium", "/usr/bin/chromium-browser"}) {
    if (fs::exists(p)) return p;
  }
  return "";
}

std::string attribute(const std::string& dom, const std::string& name) {
  std::smatch m;
  if (std::regex_search(dom, m, std::regex(name + "=\"([^\"]*)\""))) return m[1];
  return "";
}

TEST(ReportBrowser, SmokeSweepReportDrawsEveryChartWithoutErrors) {
  const std::string chromium = chromium_path();
  if (chromium.empty()) {
    GTEST_SKIP() << "chromium is not installed (scripts/setup.sh installs Debian's chromium)";
  }
  const std::string dir = scratch_dir("report_browser");
  write_dataset(dir + "/data");
  RunResult sweep = run_nanogpt(dir, std::string("sweep ") + NANOGPT_SOURCE_DIR +
                                         "/config/sweep_smoke.py --data_dir=data --out_dir=sw");
  ASSERT_EQ(sweep.exit_code, 0) << sweep.output;
  RunResult report = run_nanogpt(dir, "report sw");
  ASSERT_EQ(report.exit_code, 0) << report.output;
  if (report.output.find("without charts") != std::string::npos) {
    GTEST_SKIP() << "this build has no chart library (scripts/setup.sh installs the npm package "
                    "echarts before building): "
                 << report.output;
  }
  const std::string profile = dir + "/chromium-profile";
  fs::create_directories(profile);
  RunResult browser = run_command(
      dir, "timeout 120 '" + chromium + "' --headless --no-sandbox --disable-gpu --disable-quic "
               "--no-first-run --disable-background-networking --disable-component-update "
               "--disable-sync --user-data-dir='" + profile + "' --virtual-time-budget=5000 "
               "--dump-dom 'file://" + dir + "/sw/report.html' 2>/dev/null");
  ASSERT_EQ(browser.exit_code, 0) << browser.output.substr(0, 2000);
  const std::string& dom = browser.output;
  ASSERT_EQ(attribute(dom, "data-report-ready"), "1") << "the page script did not finish";
  EXPECT_EQ(attribute(dom, "data-errors"), "0");
  std::smatch errors;
  if (std::regex_search(dom, errors, std::regex("<pre id=\"report-errors\">([^<]*)</pre>"))) {
    EXPECT_EQ(errors[1].str(), "") << "errors in the page";
  }
  // 3 of Figure 4, 3 of Figure 5, time to target, all runs' val loss x 2, one run's curves x 2.
  const std::string expected = attribute(dom, "data-charts-expected");
  EXPECT_EQ(expected, "11");
  EXPECT_EQ(attribute(dom, "data-charts-drawn"), expected);
  std::regex counts("data-rendered-elements=\"([0-9]+)\"");
  int charts = 0;
  for (auto it = std::sregex_iterator(dom.begin(), dom.end(), counts); it != std::sregex_iterator();
       ++it) {
    ++charts;
    EXPECT_GT(std::stoi((*it)[1]), 5) << "a chart drew (almost) nothing";
  }
  EXPECT_EQ(charts, 11);
}

}  // namespace
}  // namespace nanogpt
