// OpProfile's table: per op class, time per step, share, and throughput against the measured peaks.
#include "kernels/op_profile.h"

#include <fmt/format.h>

#include <algorithm>

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

void OpProfile::add(OpClass c, const char* op, double seconds, double flops, double bytes) {
  add(c, seconds, flops, bytes);
  auto it = std::find_if(ops_.begin(), ops_.end(),
                         [&](const NamedOp& n) { return n.c == c && n.op == op; });
  if (it == ops_.end()) it = ops_.insert(ops_.end(), NamedOp{c, op, {}});
  it->stats.seconds += seconds;
  it->stats.flops += flops;
  it->stats.bytes += bytes;
  ++it->stats.calls;
}

namespace {
constexpr int kOpNameWidth = 44;  // "residual_layernorm_forward (elementwise)" and a margin
}  // namespace

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
  // One row: name, ms per step, share, calls per step, throughput against the class's peak.
  auto row = [&](const std::string& name, OpClass c, const OpStats& s, int name_width = 12) {
    const double ms = s.seconds / steps * 1e3;
    const double share = step_seconds_ > 0 ? s.seconds / step_seconds_ : 0.0;
    const double flop_peak = peaks.for_op_class(c);
    // Compute-bound if its arithmetic intensity is above the machine balance point.
    const bool compute = s.bytes <= 0 || s.flops / s.bytes > flop_peak / peak_bytes_per_s;
    std::string throughput = "-", percent = "-";
    if (s.seconds > 0 && compute && s.flops > 0) {
      throughput = fmt::format("{:.1f} GFLOP/s", s.flops / s.seconds / 1e9);
      if (flop_peak > 0) percent = fmt::format("{:.0f}%", 100.0 * s.flops / s.seconds / flop_peak);
    } else if (s.seconds > 0 && s.bytes > 0) {
      throughput = fmt::format("{:.1f} GB/s", s.bytes / s.seconds / 1e9);
      if (peak_bytes_per_s > 0) {
        percent = fmt::format("{:.0f}%", 100.0 * s.bytes / s.seconds / peak_bytes_per_s);
      }
    }
    return fmt::format("{:<{}} {:>10.2f} {:>6.1f}% {:>8.4g} {:>12} {:>9} {}\n", name, name_width,
                       ms, 100.0 * share, static_cast<double>(s.calls) / steps, throughput, percent,
                       s.flops > 0 || s.bytes > 0 ? (compute ? "compute" : "memory") : "");
  };
  double timed = 0;
  for (int i = 0; i < static_cast<int>(OpClass::kCount); ++i) {
    const OpStats& s = stats_[i];
    if (s.calls == 0) continue;
    timed += s.seconds;
    out += row(op_class_name(static_cast<OpClass>(i)), static_cast<OpClass>(i), s);
  }
  const double other = step_seconds_ - timed;
  out += fmt::format("{:<12} {:>10.2f} {:>6.1f}%\n", "other", other / steps * 1e3,
                     step_seconds_ > 0 ? 100.0 * other / step_seconds_ : 0.0);
  // The ops by name within each class, largest first, down to 0.5% of the step.
  std::vector<const NamedOp*> named;
  for (const NamedOp& n : ops_) {
    if (step_seconds_ <= 0 || n.stats.seconds >= 0.005 * step_seconds_) named.push_back(&n);
  }
  std::stable_sort(named.begin(), named.end(), [](const NamedOp* a, const NamedOp* b) {
    return a->c != b->c ? a->c < b->c : a->stats.seconds > b->stats.seconds;
  });
  if (!named.empty()) {
    out += fmt::format("{:<{}} {:>10} {:>7} {:>8} {:>12} {:>9} {}\n", "op (class)", kOpNameWidth,
                       "ms/step", "share", "calls", "throughput", "% peak", "bound by");
  }
  for (const NamedOp* n : named) {
    out += row(fmt::format("{} ({})", n->op, op_class_name(n->c)), n->c, n->stats, kOpNameWidth);
  }
  return out;
}

}  // namespace nanogpt
