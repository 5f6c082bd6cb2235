// OpProfile's table: per op class, time per step, share, and throughput against the measured peaks.
#include "kernels/op_profile.h"

#include <fmt/format.h>

#include "kernels/compute_peaks.h"

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

std::string OpProfile::table(const ComputePeaks& peaks, double peak_bytes_per_s) const {
  const double steps = steps_ > 0 ? static_cast<double>(steps_) : 1.0;
  const double step_ms = step_seconds_ / steps * 1e3;
  std::string units;
  if (peaks.arithmetic() != peaks.fp32_fma.flops_per_s) {
    units +=
        fmt::format(", {:.1f} GFLOP/s bf16 dot products (attention's %)", peaks.arithmetic() / 1e9);
  }
  // The optimizer's FLOPs (Muon's Newton-Schulz) are bf16 matmuls in bf16 runs (for_op_class).
  const bool optimizer_on_matmul = peaks.for_op_class(OpClass::kOptimizer) == peaks.matmul() &&
                                   peaks.matmul() != peaks.fp32_fma.flops_per_s;
  if (peaks.matmul() != peaks.arithmetic()) {
    units += fmt::format(
        ", {:.1f} GFLOP/s {} ({}'s %)", peaks.matmul() / 1e9, peaks.matmul_unit(),
        optimizer_on_matmul ? "matmul's, classifier's and optimizer" : "matmul's and classifier");
  } else if (peaks.matmul() != peaks.fp32_fma.flops_per_s) {
    units = fmt::format(", {:.1f} GFLOP/s {} (the % of matmul, attention{})", peaks.matmul() / 1e9,
                        peaks.matmul_unit(),
                        optimizer_on_matmul ? ", classifier and optimizer" : " and classifier");
  }
  std::string out = fmt::format(
      "profile over {} steps ({:.1f} ms/step; peaks measured here: {:.1f} GFLOP/s fp32{}, "
      "{:.1f} GB/s memory)\n",
      steps_, step_ms, peaks.fp32_fma.flops_per_s / 1e9, units, peak_bytes_per_s / 1e9);
  out += fmt::format("{:<12} {:>10} {:>7} {:>8} {:>12} {:>9} {}\n", "op class", "ms/step", "share",
                     "calls", "throughput", "% peak", "bound by");
  double timed = 0;
  for (int i = 0; i < static_cast<int>(OpClass::kCount); ++i) {
    const OpStats& s = stats_[i];
    if (s.calls == 0) continue;
    timed += s.seconds;
    const double ms = s.seconds / steps * 1e3;
    const double share = step_seconds_ > 0 ? s.seconds / step_seconds_ : 0.0;
    const double flop_peak = peaks.for_op_class(static_cast<OpClass>(i));
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
