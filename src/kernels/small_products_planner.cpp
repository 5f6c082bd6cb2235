// Choosing the way of a float32 run's small products (the tiles or oneDNN) by timing one step's
// worth of them in each way (see kernel_planner.h: plan_small_products).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/cpu_info.h"
#include "core/timer.h"
#include "kernels/cpu/small_gemm.h"
#include "kernels/kernel_planner.h"
#include "kernels/kernel_ways.h"
#include "kernels/ops.h"
#include "kernels/planner_probe.h"

namespace nanogpt {
namespace {

// oneDNN replaces the tiles only when the tiles take more than this times its time.
constexpr double kHysteresis = 1.1;

double product_flops(const ProductShape& p) {
  return 2.0 * static_cast<double>(p.n) * p.c * p.oc * (p.backward ? 3 : 1);
}

// One product's operands, run forward (+ backward) in a given way.
class ProductProbe {
 public:
  explicit ProductProbe(const ProductShape& p) : p_(p) {
    const size_t nc = static_cast<size_t>(p.n) * p.c, noc = static_cast<size_t>(p.n) * p.oc;
    const size_t w = static_cast<size_t>(p.oc) * p.c;
    ProbeNoise noise(0x2545F4914F6CDD1Dull);
    auto fill = [&](std::vector<float>& v, size_t n, float scale) {
      v.resize(n);
      for (auto& e : v) e = scale * noise.next();
    };
    fill(inp_, nc, 1.0f);
    fill(weight_, w, 0.1f);
    fill(bias_, static_cast<size_t>(p.oc), 0.1f);
    fill(dout_, noc, 0.01f);
    out_.resize(noc);
    dinp_.resize(nc);
    dweight_.resize(w);
    dbias_.resize(static_cast<size_t>(p.oc));
  }

  // Milliseconds of one forward (+ backward) in `way` (the context's ways restored after).
  double run(CpuBackend& ctx, SmallProductsWay way) {
    KernelWays ways = ctx.ways();
    ways.small_products_f32 = way;
    const ScopedWays scoped(ctx, ways);
    Timer t;
    cpu::matmul_forward(ctx, out_.data(), inp_.data(), weight_.data(), bias_.data(), p_.n, p_.c,
                        p_.oc);
    if (p_.backward) {
      cpu::matmul_backward(ctx, dinp_.data(), dweight_.data(), dbias_.data(), dout_.data(),
                           inp_.data(), weight_.data(), p_.n, p_.c, p_.oc);
    }
    return t.ms();
  }

 private:
  ProductShape p_;
  std::vector<float> inp_, weight_, bias_, dout_, out_, dinp_, dweight_, dbias_;
};

}  // namespace

void plan_small_products(KernelPlan& plan, CpuBackend& ctx, DType dtype,
                         const std::vector<ProductShape>& products, const std::string& requested,
                         int threads, bool use_cache, double min_timed_flops) {
  plan.small_products.clear();
  plan.small_products_how.clear();
  plan.ways.small_products_f32 = SmallProductsWay::kTiles;
  SmallProductsWay forced = SmallProductsWay::kTiles;
  AttentionBf16Way forced_attention = AttentionBf16Way::kNative;
  if (parse_way(requested, forced_attention)) {
    forced = small_products_way_for(forced_attention);
  } else {
    CHECK(requested == "auto" || parse_way(requested, forced),
          "kernel_choice = '{}': expected 'auto' (measure each way at this run's shapes), "
          "'native', 'widened' or 'onednn'",
          requested);
  }
  // The products that have a choice: float32 ones the tiles take.
  std::vector<ProductShape> small;
  if (dtype == DType::kF32) {
    for (const ProductShape& p : products) {
      if (p.per_step > 0 && cpu::small_gemm_fits(p.n, p.c, p.oc)) small.push_back(p);
    }
  }
  if (small.empty()) return;
  double flops = 0;
  std::string shapes;
  for (const ProductShape& p : small) {
    flops += p.per_step * product_flops(p);
    shapes += fmt::format("{}{}x{}x{}{}*{:g}", shapes.empty() ? "" : " ", p.n, p.c, p.oc,
                          p.backward ? "" : "f", p.per_step);
  }
  const bool timed = requested == "auto" && flops >= min_timed_flops;
  for (SmallProductsWay way : kSmallProductsWays) {
    WayTiming w;
    w.way = way_name(way);
    w.available = true;  // oneDNN's float32 matmul runs on every CPU
    plan.small_products.push_back(w);
  }
  if (timed) {
    // Rounds over every product, the ways taking turns on each (a busy moment hits both alike):
    // a warm-up round (threads woken, oneDNN's primitives made, memory touched), then the best
    // of 5 to 11 rounds, fewer once ~40 ms per way have gone into timing.
    std::vector<ProductProbe> probes(small.begin(), small.end());
    std::vector<std::array<double, 2>> best(small.size(), {1e30, 1e30});
    double spent = 0;
    const double budget = 2 * 40.0;
    for (int round = 0; round < 12 && (round < 6 || spent < budget); ++round) {
      for (size_t i = 0; i < probes.size(); ++i) {
        for (SmallProductsWay way : kSmallProductsWays) {
          const double ms = probes[i].run(ctx, way);
          spent += ms;
          double& b = best[i][static_cast<size_t>(way)];
          if (round > 0) b = std::min(b, ms);
        }
      }
    }
    std::vector<double> step_ms(std::size(kSmallProductsWays), 0.0);
    for (size_t i = 0; i < small.size(); ++i) {
      for (size_t k = 0; k < 2; ++k) step_ms[k] += small[i].per_step * best[i][k];
    }
    for (SmallProductsWay way : kSmallProductsWays) {
      WayTiming& w = plan.small_products[static_cast<size_t>(way)];
      const std::string key = fmt::format("small products f32 {} {}", w.way, shapes);
      const double ms = step_ms[static_cast<size_t>(way)];
      const PeakFlops kept = remember_best_peak(key, flops / (ms * 1e-3), threads, "", use_cache);
      w.measured = true;
      w.ms = flops / kept.flops_per_s * 1e3;
      w.from_cache = kept.from_cache;
    }
    const double tiles_ms = plan.small_products[0].ms, onednn_ms = plan.small_products[1].ms;
    plan.ways.small_products_f32 =
        onednn_ms * kHysteresis < tiles_ms ? SmallProductsWay::kOnednn : SmallProductsWay::kTiles;
    plan.small_products_how = "measured";
  } else if (requested == "auto") {
    plan.small_products_how =
        fmt::format("{:.0f} MFLOP per step is too little to time: the tiles", flops / 1e6);
  } else {
    plan.ways.small_products_f32 = forced;
    plan.small_products_how = "forced by kernel_choice = '" + requested + "'";
  }
}

}  // namespace nanogpt
