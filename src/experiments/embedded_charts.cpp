// echarts.min.js included with the assembler's .incbin from the file CMake passes as
// NANOGPT_ECHARTS_JS (CMake also makes this file depend on it). Without it (no npm package at
// configure time) the library is empty and report.html says how to get the charts.
#include "experiments/embedded_charts.h"

#ifdef NANOGPT_ECHARTS_JS
__asm__(
    ".section .rodata\n"
    ".global nanogpt_echarts_js_begin\n"
    ".balign 16\n"
    "nanogpt_echarts_js_begin:\n"
    ".incbin \"" NANOGPT_ECHARTS_JS
    "\"\n"
    ".global nanogpt_echarts_js_end\n"
    "nanogpt_echarts_js_end:\n"
    ".byte 0\n"
    ".previous\n");
extern "C" const char nanogpt_echarts_js_begin[];
extern "C" const char nanogpt_echarts_js_end[];
#endif

namespace nanogpt {

std::string_view embedded_echarts_js() {
#ifdef NANOGPT_ECHARTS_JS
  return {nanogpt_echarts_js_begin,
          static_cast<size_t>(nanogpt_echarts_js_end - nanogpt_echarts_js_begin)};
#else
  return {};
#endif
}

}  // namespace nanogpt
