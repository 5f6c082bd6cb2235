// The planner of kernel ways (issue 30; FFTW's planner, cudnn.benchmark): for each family of
// products with several ways (kernels/kernel_ways.h: a bf16 run's attention here, a float32
// run's small products in small_products_planner.cpp), time each candidate at the run's own shapes
// for a few milliseconds, the ways taking turns, and take the fastest (the way of the faster unit
// unless the other is clearly faster; shapes too small to time take the faster unit's way). A rate
// is kept per CPU, thread count, candidate and shape in the peak cache (core/cpu_info.h: the best
// ever measured here), so a busy moment at start-up cannot make a slower way win for good.
// `requested` forces a way instead
// ("auto" = measure): the tests run every way on every CPU that has it.
#pragma once

#include <string>
#include <vector>

#include "kernels/cpu_backend.h"
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
  // The small float32 products (plan_small_products): empty where the run has none that fit the
  // tiles (or does not run its products in float32). ms: one step's such products.
  std::vector<WayTiming> small_products;
  std::string small_products_how;
  // For the compute: line, e.g. "attention bf16: native 3.10 ms, widened 4.52 ms -> native
  // (measured)", and "small products f32: tiles 2.10 ms, onednn 2.52 ms -> tiles (measured)";
  // empty where neither family has a choice.
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
KernelPlan plan_kernel_ways(CpuBackend& ctx, DType dtype, const AttentionShape& shape,
                            const std::string& requested, int threads, const UnitRates& units,
                            bool use_cache = true,
                            double min_timed_flops = kMinTimedAttentionFlops);

// A float32 product a training step runs per_step times: (n, c) x (c, oc) with the model's bias,
// forward and (backward) the accumulated input and weight gradients and the bias's, as the
// model's linear layers; Muon's Newton-Schulz products are forward only (backward false).
struct ProductShape {
  int64_t n = 1;
  int c = 16, oc = 16;
  double per_step = 1;
  bool backward = true;
};

// Steps' small products of fewer FLOPs than this are not timed (the tiles' way is kept).
inline constexpr double kMinTimedProductFlops = 2e7;

// The small products' way of a run in `dtype` (kernels/kernel_ways.h), into plan.ways,
// plan.small_products and plan.small_products_how: only float32 runs choose, between the tiles
// and oneDNN for those of `products` that small_gemm_fits (the others run on oneDNN either way),
// by timing one step's worth of them in each way, taking turns, a warm-up first; the tiles unless
// oneDNN is clearly faster. requested: "auto", or a forced way: "onednn", or our tiles for
// "tiles", "native" and "widened" (as --kernel_choice's values mean it, kernel_ways.h).
void plan_small_products(KernelPlan& plan, CpuBackend& ctx, DType dtype,
                         const std::vector<ProductShape>& products, const std::string& requested,
                         int threads, bool use_cache = true,
                         double min_timed_flops = kMinTimedProductFlops);

}  // namespace nanogpt
