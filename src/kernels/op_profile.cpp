// OpProfile's table: per op class, time per step, share, and throughput against the measured peaks.
#include "kernels/op_profile.h"

#include <fmt/format.h>

namespace nanogpt {

const char* op_class_name(OpClass c) {
  switch (c) {
    case OpClass::kMatmul:
      return "matmul";
    case OpClass::kAttention:
      return "attention";
    case OpClass::kNorm:
      return "norm";
    case OpClass::kElementwise:
      return "elementwise";
    case OpClass::kClassifier:
      return "classifier";
    case OpClass::kOptimizer:
      return "optimizer";
    case OpClass::kData:
      return "data";
    case OpClass::kCount:
      break;
  }
  return "?";
}

namespace {

bool products_in_bf16(OpClass c) {
  return c == OpClass::kMatmul || c == OpClass::kAttention || c == OpClass::kClassifier;
}

}  // namespace

std::string OpProfile::table(double peak_flops, double peak_bytes_per_s,
                             double bf16_peak_flops) const {
  const double steps = steps_ > 0 ? static_cast<double>(steps_) : 1.0;
  const double step_ms = step_seconds_ / steps * 1e3;
  const std::string bf16_peak =
      bf16_peak_flops > 0
          ? fmt::format(", {:.1f} GFLOP/s bf16 dot products (the % of matmul, attention and "
                        "classifier)",
                        bf16_peak_flops / 1e9)
          : "";
  std::string out = fmt::format(
      "profile over {} steps ({:.1f} ms/step; peaks measured here: {:.1f} GFLOP/s fp32{}, "
      "{:.1f} GB/s memory)\n",
      steps_, step_ms, peak_flops / 1e9, bf16_peak, peak_bytes_per_s / 1e9);
  out += fmt::format("{:<12} {:>10} {:>7} {:>8} {:>12} {:>9} {}\n", "op class", "ms/step", "share",
                     "calls", "throughput", "% peak", "bound by");
  double timed = 0;
  for (int i = 0; i < static_cast<int>(OpClass::kCount); ++i) {
    const OpStats& s = stats_[i];
    if (s.calls == 0) continue;
    timed += s.seconds;
    const double ms = s.seconds / steps * 1e3;
    const double share = step_seconds_ > 0 ? s.seconds / step_seconds_ : 0.0;
    const double flop_peak =
        bf16_peak_flops > 0 && products_in_bf16(static_cast<OpClass>(i)) ? bf16_peak_flops
                                                                         : peak_flops;
    // Compute-bound if its arithmetic intensity is above the machine balance point.
    const bool compute = s.bytes <= 0 || s.flops / s.bytes > flop_peak / peak_bytes_per_s;
    std::string throughput = "-", percent = "-";
    if (s.seconds > 0 && compute && s.flops > 0) {
      throughput = fmt::format("{:.1f} GFLOP/s", s.flops / s.seconds / 1e9);
      percent = fmt::format("{:.0f}%", 100.0 * s.flops / s.seconds / flop_peak);
    } else if (s.seconds > 0 && s.bytes > 0) {
      throughput = fmt::format("{:.1f} GB/s", s.bytes / s.seconds / 1e9);
      percent = fmt::format("{:.0f}%", 100.0 * s.bytes / s.seconds / peak_bytes_per_s);
    }
    out += fmt::format("{:<12} {:>10.2f} {:>6.1f}% {:>8.4g} {:>12} {:>9} {}\n",
                       op_class_name(static_cast<OpClass>(i)), ms, 100.0 * share,
                       static_cast<double>(s.calls) / steps, throughput, percent,
                       s.flops > 0 || s.bytes > 0 ? (compute ? "compute" : "memory") : "");
  }
  const double other = step_seconds_ - timed;
  out += fmt::format("{:<12} {:>10.2f} {:>6.1f}%\n", "other", other / steps * 1e3,
                     step_seconds_ > 0 ? 100.0 * other / step_seconds_ : 0.0);
  return out;
}

}  // namespace nanogpt
