// Choosing kernel ways by timing the candidates at the run's shape (see kernel_planner.h).
#include "kernels/kernel_planner.h"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/check.h"
#include "core/cpu_info.h"
#include "core/float16.h"
#include "core/timer.h"
#include "kernels/cpu/attention_bf16.h"
#include "kernels/kernel_ways.h"
#include "kernels/ops_lowp.h"
#include "kernels/planner_probe.h"

namespace nanogpt {
namespace {

// The other way replaces the faster unit's only when that takes more than this times its time.
constexpr double kHysteresis = 1.1;

// One causal attention forward + backward of g sequences: the forward's two products over the
// lower triangle (2 T^2 C) and the backward's four (4 T^2 C).
double attention_flops(int g, int T, int C) { return 6.0 * g * static_cast<double>(T) * T * C; }

// One causal attention (one batch group) with its inputs, run forward + backward in a given way.
class AttentionProbe {
 public:
  AttentionProbe(int g, const AttentionShape& s) : g_(g), s_(s) {
    const int64_t rows = static_cast<int64_t>(g) * s.T;
    qkv_.resize(static_cast<size_t>(rows * 3 * s.C));
    out_.resize(static_cast<size_t>(rows * s.C));
    dout_.resize(out_.size());
    dqkv_.resize(qkv_.size());
    lse_.resize(static_cast<size_t>(g) * s.NH * s.T);
    ProbeNoise noise(0x9E3779B97F4A7C15ull);
    for (auto& v : qkv_) v = float_to_bf16(noise.next());
    for (auto& v : dout_) v = float_to_bf16(0.01f * noise.next());
  }

  // Milliseconds of one forward + backward in `way` (the context's ways restored after).
  double run(CpuBackend& ctx, AttentionBf16Way way) {
    KernelWays ways = ctx.ways();
    ways.attention_bf16 = way;
    const ScopedWays scoped(ctx, ways);
    Timer t;
    cpu::attention_forward(ctx, TypedPtr(out_.data(), DType::kBF16), lse_.data(),
                           ConstTypedPtr(qkv_.data(), DType::kBF16), g_, s_.T, s_.C, s_.NH,
                           s_.dropout, 7);
    std::fill(dqkv_.begin(), dqkv_.end(), uint16_t{0});
    cpu::attention_backward(
        ctx, TypedPtr(dqkv_.data(), DType::kBF16), ConstTypedPtr(dout_.data(), DType::kBF16),
        ConstTypedPtr(out_.data(), DType::kBF16), lse_.data(),
        ConstTypedPtr(qkv_.data(), DType::kBF16), g_, s_.T, s_.C, s_.NH, s_.dropout, 7);
    return t.ms();
  }

 private:
  int g_;
  AttentionShape s_;
  std::vector<uint16_t> qkv_, out_, dout_, dqkv_;
  std::vector<float> lse_;
};

}  // namespace

namespace {

// "native 3.10 ms, widened not timed, ..." for one family's timings.
std::string describe_timings(const std::vector<WayTiming>& timings) {
  std::string times;
  for (const auto& w : timings) {
    if (!times.empty()) times += ", ";
    if (!w.available) {
      times += w.way + " unavailable here";
    } else if (!w.measured) {
      times += w.way + " not timed";
    } else {
      times += fmt::format("{} {:.2f} ms{}", w.way, w.ms, w.from_cache ? " (best here)" : "");
    }
  }
  return times;
}

}  // namespace

std::string KernelPlan::describe() const {
  std::string out;
  if (!attention_bf16.empty()) {
    out = fmt::format("attention bf16: {} -> {} ({})", describe_timings(attention_bf16),
                      way_name(ways.attention_bf16), how);
  }
  if (!small_products.empty()) {
    out += fmt::format("{}small products f32: {} -> {} ({})", out.empty() ? "" : "; ",
                       describe_timings(small_products), way_name(ways.small_products_f32),
                       small_products_how);
  }
  return out;
}

KernelPlan plan_kernel_ways(CpuBackend& ctx, DType dtype, const AttentionShape& shape,
                            const std::string& requested, int threads, const UnitRates& units,
                            bool use_cache, double min_timed_flops) {
  KernelPlan plan;
  AttentionBf16Way forced = AttentionBf16Way::kNative;
  CHECK(requested == "auto" || parse_way(requested, forced),
        "kernel_choice = '{}': expected 'auto' (measure each way at this run's shapes), "
        "'native', 'widened' or 'onednn'",
        requested);
  if (dtype != DType::kBF16) {
    plan.how = "no choice outside bfloat16";
    return plan;
  }
  const int g = attention_batch_group(shape.B, shape.NH);
  const bool native_here = cpu::attention_bf16_native(g, shape.T, shape.C, shape.NH);
  // oneDNN's bf16 matmuls are native only where the CPU has bf16 dot products (AVX512_BF16, AMX):
  // elsewhere it emulates them at a fraction of its fp32 rate.
  const bool onednn_here = have_bf16_dot_products();
  const double flops = attention_flops(g, shape.T, shape.C);
  auto available = [&](AttentionBf16Way way) {
    return way == AttentionBf16Way::kWidened ||
           (way == AttentionBf16Way::kNative ? native_here : onednn_here);
  };
  std::vector<AttentionBf16Way> candidates;
  for (AttentionBf16Way way : kAttentionBf16Ways) {
    WayTiming w;
    w.way = way_name(way);
    w.available = available(way);
    if (w.available && requested == "auto" && flops >= min_timed_flops) candidates.push_back(way);
    plan.attention_bf16.push_back(w);
  }
  if (!candidates.empty()) {
    // The ways take turns (a busy moment hits all alike), a warm-up round first, then the best
    // of up to 5 rounds, fewer once ~40 ms per way have gone into timing.
    AttentionProbe probe(g, shape);
    std::vector<double> best(std::size(kAttentionBf16Ways), 1e30);
    double spent = 0;
    const double budget = 40.0 * static_cast<double>(candidates.size()) / 2;
    for (int round = 0; round < 6 && (round < 3 || spent < budget); ++round) {
      for (AttentionBf16Way way : candidates) {
        const double ms = probe.run(ctx, way);
        spent += ms;
        if (round > 0) best[static_cast<int>(way)] = std::min(best[static_cast<int>(way)], ms);
      }
    }
    for (AttentionBf16Way way : candidates) {
      WayTiming& w = plan.attention_bf16[static_cast<int>(way)];
      const std::string key = fmt::format("attention bf16 {} g {} T {} C {} NH {} dropout {}",
                                          w.way, g, shape.T, shape.C, shape.NH, shape.dropout > 0);
      const double ms = best[static_cast<int>(way)];
      const PeakFlops kept = remember_best_peak(key, flops / (ms * 1e-3), threads, "", use_cache);
      w.measured = true;
      w.ms = flops / kept.flops_per_s * 1e3;
      w.from_cache = kept.from_cache;
    }
  }
  const WayTiming& native = plan.attention_bf16[static_cast<int>(AttentionBf16Way::kNative)];
  // The unit-level preference: native where bf16 dot products outrun fp32 FMAs here.
  const bool native_unit = native.available && units.bf16_dot >= units.fp32_fma;
  const AttentionBf16Way preferred =
      native_unit ? AttentionBf16Way::kNative : AttentionBf16Way::kWidened;
  const WayTiming& pref = plan.attention_bf16[static_cast<int>(preferred)];
  if (requested == "auto" && !pref.measured) {
    plan.ways.attention_bf16 = preferred;
    if (!native.available && !plan.attention_bf16[2].available) {
      plan.how = "the only way here";
    } else {
      plan.how = fmt::format(
          "{:.0f} MFLOP per attention group is too little to time: the way of the faster unit, "
          "{} at {:.0f} GFLOP/s against {} {:.0f}",
          flops / 1e6, native_unit ? "bf16 dot products" : "fp32 FMAs",
          (native_unit ? units.bf16_dot : units.fp32_fma) / 1e9,
          native_unit ? "fp32 FMAs" : "bf16 dot products",
          (native_unit ? units.fp32_fma : units.bf16_dot) / 1e9);
    }
  } else if (requested == "auto") {
    // The faster unit's way unless another is clearly faster: two runs on one machine (a test's
    // straight and resumed runs, a sweep's seeds) should not flip between ways whose times are
    // within noise of each other.
    AttentionBf16Way fastest = preferred;
    for (AttentionBf16Way way : candidates) {
      if (plan.attention_bf16[static_cast<int>(way)].ms <
          plan.attention_bf16[static_cast<int>(fastest)].ms) {
        fastest = way;
      }
    }
    const double fastest_ms = plan.attention_bf16[static_cast<int>(fastest)].ms;
    plan.ways.attention_bf16 = fastest_ms * kHysteresis < pref.ms ? fastest : preferred;
    plan.how = "measured";
  } else if (!plan.attention_bf16[static_cast<int>(forced)].available) {
    plan.ways.attention_bf16 = preferred;
    plan.how = fmt::format(
        "kernel_choice = '{}', but this CPU (or its cap) and shape cannot run it here: {}",
        requested, way_name(preferred));
  } else {
    plan.ways.attention_bf16 = forced;
    plan.how = "forced by kernel_choice = '" + requested + "'";
  }
  return plan;
}

}  // namespace nanogpt
