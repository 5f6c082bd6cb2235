// The chart library compiled into the binary for report.html: Apache ECharts' echarts.min.js from
// the npm package `echarts` (scripts/setup.sh installs it into data/npm; CMake's
// NANOGPT_ECHARTS_JS names the file). Empty when the build had no copy.
#pragma once

#include <string_view>

namespace nanogpt {

std::string_view embedded_echarts_js();

}  // namespace nanogpt
