// The planner of kernel ways (issue 30; FFTW's planner, cudnn.benchmark): for each family of
// products with several ways (kernels/kernel_ways.h), time each candidate at the run's own shape
// for a few milliseconds, the ways taking turns, and take the fastest (the way of the faster unit
// unless the other is clearly faster; shapes too small to time take the faster unit's way). A rate
// is kept per CPU, thread count, candidate and shape in the peak cache (core/cpu_info.h: the best
// ever measured here), so a busy moment at start-up cannot make a slower way win for good.
// `requested` forces a way instead
// ("auto" = measure): the tests run every way on every CPU that has it.
#pragma once

#include <string>
#include <vector>

#include "kernels/context.h"
#include "kernels/dtype.h"
#include "kernels/kernel_ways.h"

namespace nanogpt {

// The attention the run will call: B sequences of T tokens, C wide, NH heads (one layer).
struct AttentionShape {
  int B = 1, T = 1, C = 64, NH = 1;
  float dropout = 0.0f;
};

struct WayTiming {
  std::string way;
  bool available = false;   // this CPU (and cap) and shape can run it
  bool measured = false;    // timed now (false: forced without measuring, or unavailable)
  double ms = 0;            // one forward + backward of one attention group, best known here
  bool from_cache = false;  // ms is an earlier, faster measurement of this CPU
};

struct KernelPlan {
  KernelWays ways;
  std::vector<WayTiming> attention_bf16;  // empty outside bfloat16 runs
  std::string how;  // "measured", "forced by --kernel_choice=widened", "kept from the checkpoint"
  // For the compute: line, e.g. "attention bf16: native 3.10 ms, widened 4.52 ms -> native
  // (measured)"; empty outside bfloat16 runs.
  std::string describe() const;
};

// The arithmetic units the ways run on, as the run measured them (kernels/compute_peaks.h): the
// unit-level preference (native where bf16 dot products outrun fp32 FMAs) decides shapes too small
// to time reliably, and ties.
struct UnitRates {
  double bf16_dot = 0;  // FLOP/s; 0: none here
  double fp32_fma = 0;
};

// Attention groups of fewer FLOPs than this (forward + backward) are not timed: a fraction of a
// millisecond, where timer and scheduling noise would decide (and two runs could disagree).
inline constexpr double kMinTimedAttentionFlops = 1e8;

// The ways for a run in `dtype` whose attention has `shape`. requested: "auto", "native",
// "widened" or "onednn" (a forced way the CPU or shape cannot run falls back to the faster unit's
// way, and says so). oneDNN's way is chosen only by measuring (or forced), never by the unit rule.
KernelPlan plan_kernel_ways(KernelContext& ctx, DType dtype, const AttentionShape& shape,
                            const std::string& requested, int threads, const UnitRates& units,
                            bool use_cache = true,
                            double min_timed_flops = kMinTimedAttentionFlops);

}  // namespace nanogpt
