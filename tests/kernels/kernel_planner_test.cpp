// Kernel ways (kernels/kernel_ways.h) and their planner (kernels/kernel_planner.h): the context's
// way selects the bf16 attention kernel (native: the bf16 kernel's bits; widened: the float32
// kernel's on widened inputs, on every CPU; onednn: tests/kernels/attention_onednn_test.cpp);
// 'auto' times every way this CPU has at the shape and takes the fastest (the faster unit's way
// unless another is more than 10% faster), and below the size worth timing takes the faster
// unit's way; a forced way is taken without timing, a forced way the CPU lacks falls back to the
// faster unit's and says so; a bad value is named; outside bfloat16 there is no choice. The small
// float32 products' way (tiles or oneDNN): timed for float32 runs at the shapes the tiles take,
// the tiles unless oneDNN is more than 10% faster, forced by the same values, none elsewhere.
#include "kernels/kernel_planner.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/check.h"
#include "core/cpu_info.h"
#include "core/float16.h"
#include "core/rng.h"
#include "kernel_test_util.h"
#include "kernels/cpu/attention_bf16.h"
#include "kernels/ops.h"
#include "kernels/ops_lowp.h"

namespace nanogpt {
namespace {

std::vector<uint16_t> bf16_of(const std::vector<float>& v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = float_to_bf16(v[i]);
  return out;
}

TEST(KernelWays, TheContextsWaySelectsTheAttentionKernel) {
  const int B = 2, T = 50, C = 128, NH = 2;
  const auto qkv = bf16_of(testing::random_normal(size_t(B) * T * 3 * C, 4));
  const int64_t n = int64_t{B} * T * C;
  auto run = [&](AttentionBf16Way way) {
    CpuBackend ctx;
    ctx.set_ways({.attention_bf16 = way});
    std::vector<uint16_t> out(static_cast<size_t>(n));
    std::vector<float> lse(size_t(B) * NH * T);
    cpu::attention_forward(ctx, TypedPtr(out.data(), DType::kBF16), lse.data(),
                           ConstTypedPtr(qkv.data(), DType::kBF16), B, T, C, NH, 0.1f, 5);
    return out;
  };
  // Widened: the float32 kernel on the widened inputs, rounded once at the end, on every CPU.
  std::vector<float> q32(qkv.size()), o32(static_cast<size_t>(n)), lse32(size_t(B) * NH * T);
  for (size_t i = 0; i < qkv.size(); ++i) q32[i] = bf16_to_float(qkv[i]);
  cpu::attention_forward(o32.data(), lse32.data(), q32.data(), B, T, C, NH, 0.1f,
                         splitmix64(5));  // one batch group, seeded as the op seeds it
  const std::vector<uint16_t> widened = run(AttentionBf16Way::kWidened);
  EXPECT_EQ(widened, bf16_of(o32));
  if (!cpu::attention_bf16_native(B, T, C, NH)) GTEST_SKIP() << "no native bf16 kernel here";
  const std::vector<uint16_t> native = run(AttentionBf16Way::kNative);
  std::vector<uint16_t> direct(static_cast<size_t>(n));
  std::vector<float> lse(size_t(B) * NH * T);
  cpu::attention_forward_bf16(direct.data(), lse.data(), qkv.data(), B, T, C, NH, 0.1f,
                              splitmix64(5));
  EXPECT_EQ(native, direct);
  EXPECT_NE(native, widened);  // P rounded to bf16 before P V: other bits somewhere
}

TEST(KernelPlanner, AutoTimesEveryWayHereAndTakesTheFaster) {
  CpuBackend ctx;
  const AttentionShape shape{4, 64, 128, 2, 0.0f};
  // The unit rates of a CPU whose bf16 dot products run at twice the FMA rate (Zen 5); timed
  // whatever the size.
  const UnitRates units{800e9, 400e9};
  const KernelPlan plan = plan_kernel_ways(ctx, DType::kBF16, shape, "auto", 2, units, false, 0);
  ASSERT_EQ(plan.attention_bf16.size(), 3u);
  const WayTiming& native = plan.attention_bf16[0];
  const WayTiming& widened = plan.attention_bf16[1];
  const WayTiming& onednn = plan.attention_bf16[2];
  EXPECT_EQ(native.way, "native");
  EXPECT_EQ(widened.way, "widened");
  EXPECT_EQ(onednn.way, "onednn");
  EXPECT_TRUE(widened.available && widened.measured);
  EXPECT_GT(widened.ms, 0);
  EXPECT_EQ(native.available, cpu::attention_bf16_native(4, 64, 128, 2));
  EXPECT_EQ(native.measured, native.available);
  EXPECT_EQ(onednn.available, have_bf16_dot_products());
  EXPECT_EQ(onednn.measured, onednn.available);
  // The faster unit's way (native here where it exists, by these rates) unless another is more
  // than 10% faster.
  const WayTiming& pref = native.available ? native : widened;
  const WayTiming* fastest = &pref;
  for (const WayTiming* w : {&native, &widened, &onednn}) {
    if (w->measured && w->ms < fastest->ms) fastest = w;
  }
  const std::string chosen = fastest->ms * 1.1 < pref.ms ? fastest->way : pref.way;
  EXPECT_EQ(way_name(plan.ways.attention_bf16), chosen) << plan.describe();
  EXPECT_EQ(plan.how, "measured");
  EXPECT_NE(plan.describe().find("attention bf16: "), std::string::npos) << plan.describe();
  EXPECT_NE(plan.describe().find(" ms"), std::string::npos) << plan.describe();
  EXPECT_EQ(ctx.ways(), KernelWays{});  // timing leaves the context's ways as they were
  RecordProperty("plan", plan.describe());
}

TEST(KernelPlanner, TooSmallToTimeTakesTheFasterUnitsWay) {
  CpuBackend ctx;
  const AttentionShape shape{4, 64, 128, 2, 0.0f};  // 12.6 MFLOP per group
  const bool native_here = cpu::attention_bf16_native(4, 64, 128, 2);
  // bf16 dot products at twice the FMA rate (Zen 5): native; at half (Intel's Xeons): widened.
  KernelPlan plan = plan_kernel_ways(ctx, DType::kBF16, shape, "auto", 2, {800e9, 400e9});
  EXPECT_FALSE(plan.attention_bf16[0].measured || plan.attention_bf16[1].measured ||
               plan.attention_bf16[2].measured);
  EXPECT_EQ(plan.ways.attention_bf16,
            native_here ? AttentionBf16Way::kNative : AttentionBf16Way::kWidened);
  if (native_here) {
    EXPECT_NE(plan.how.find("13 MFLOP per attention group is too little to time: the way of the "
                            "faster unit, bf16 dot products at 800 GFLOP/s against fp32 FMAs 400"),
              std::string::npos)
        << plan.how;
  }
  plan = plan_kernel_ways(ctx, DType::kBF16, shape, "auto", 2, {229e9, 458e9});
  EXPECT_EQ(plan.ways.attention_bf16, AttentionBf16Way::kWidened);
  if (native_here) {
    EXPECT_NE(plan.how.find("fp32 FMAs at 458 GFLOP/s against bf16 dot products 229"),
              std::string::npos)
        << plan.how;
  }
}

TEST(KernelPlanner, ForcedWaysAreTakenWithoutTiming) {
  CpuBackend ctx;
  const AttentionShape shape{4, 64, 128, 2, 0.1f};
  const UnitRates units{800e9, 400e9};
  KernelPlan plan = plan_kernel_ways(ctx, DType::kBF16, shape, "widened", 2, units, false);
  EXPECT_EQ(plan.ways.attention_bf16, AttentionBf16Way::kWidened);
  EXPECT_FALSE(plan.attention_bf16[0].measured || plan.attention_bf16[1].measured);
  EXPECT_NE(plan.describe().find("-> widened (forced by kernel_choice = 'widened')"),
            std::string::npos)
      << plan.describe();
  plan = plan_kernel_ways(ctx, DType::kBF16, shape, "native", 2, units, false);
  if (cpu::attention_bf16_native(4, 64, 128, 2)) {
    EXPECT_EQ(plan.ways.attention_bf16, AttentionBf16Way::kNative);
  } else {
    EXPECT_EQ(plan.ways.attention_bf16, AttentionBf16Way::kWidened);
    EXPECT_NE(plan.how.find("kernel_choice = 'native', but this CPU (or its cap) and shape cannot "
                            "run it here: widened"),
              std::string::npos)
        << plan.how;
  }
  plan = plan_kernel_ways(ctx, DType::kBF16, shape, "onednn", 2, units, false);
  EXPECT_FALSE(plan.attention_bf16[2].measured);
  if (have_bf16_dot_products()) {
    EXPECT_EQ(plan.ways.attention_bf16, AttentionBf16Way::kOnednn);
    EXPECT_EQ(plan.how, "forced by kernel_choice = 'onednn'");
  } else {
    EXPECT_NE(plan.ways.attention_bf16, AttentionBf16Way::kOnednn);
    EXPECT_NE(plan.how.find("kernel_choice = 'onednn', but this CPU"), std::string::npos)
        << plan.how;
  }
  try {
    plan_kernel_ways(ctx, DType::kBF16, shape, "amx", 2, units, false);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("kernel_choice = 'amx': expected 'auto'"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("'onednn'"), std::string::npos) << e.what();
  }
  // Outside bfloat16 there is nothing to choose.
  plan = plan_kernel_ways(ctx, DType::kF32, shape, "auto", 2, units, false);
  EXPECT_TRUE(plan.attention_bf16.empty());
  EXPECT_EQ(plan.describe(), "");
}

// nanoGPT's CPU recipe's products (B 12 x T 64 rows, C 128) and a product the tiles do not take.
std::vector<ProductShape> w1_products() {
  return {{768, 128, 384, 4, true},   {768, 128, 128, 5, true},   {768, 128, 512, 4, true},
          {768, 512, 128, 4, true},   {128, 384, 128, 25, false},  // a Newton-Schulz product
          {4096, 768, 50304, 1, true}};  // GPT-2's head: too large for the tiles, not timed
}

TEST(SmallProductsPlanner, AutoTimesBothWaysAtTheRunsShapesAndTakesTheFaster) {
  CpuBackend ctx;
  KernelPlan plan;
  plan_small_products(plan, ctx, DType::kF32, w1_products(), "auto", 2, false, 0);
  ASSERT_EQ(plan.small_products.size(), 2u);
  const WayTiming& tiles = plan.small_products[0];
  const WayTiming& onednn = plan.small_products[1];
  EXPECT_EQ(tiles.way, "tiles");
  EXPECT_EQ(onednn.way, "onednn");
  EXPECT_TRUE(tiles.measured && onednn.measured);
  EXPECT_GT(tiles.ms, 0);
  EXPECT_GT(onednn.ms, 0);
  EXPECT_EQ(plan.ways.small_products_f32,
            onednn.ms * 1.1 < tiles.ms ? SmallProductsWay::kOnednn : SmallProductsWay::kTiles);
  EXPECT_EQ(plan.small_products_how, "measured");
  EXPECT_NE(plan.describe().find("small products f32: tiles "), std::string::npos)
      << plan.describe();
  EXPECT_EQ(plan.describe().find("attention"), std::string::npos) << plan.describe();
  EXPECT_EQ(ctx.ways(), KernelWays{});  // timing leaves the context's ways as they were
  RecordProperty("plan", plan.describe());
}

TEST(SmallProductsPlanner, ForcedTooSmallAndOtherDtypes) {
  CpuBackend ctx;
  KernelPlan plan;
  plan_small_products(plan, ctx, DType::kF32, w1_products(), "onednn", 2, false);
  EXPECT_EQ(plan.ways.small_products_f32, SmallProductsWay::kOnednn);
  EXPECT_FALSE(plan.small_products[0].measured || plan.small_products[1].measured);
  EXPECT_NE(plan.describe().find("-> onednn (forced by kernel_choice = 'onednn')"),
            std::string::npos)
      << plan.describe();
  for (const char* ours : {"native", "widened", "tiles"}) {
    plan_small_products(plan, ctx, DType::kF32, w1_products(), ours, 2, false);
    EXPECT_EQ(plan.ways.small_products_f32, SmallProductsWay::kTiles) << ours;
  }
  // Below the FLOPs worth timing: the tiles, and why.
  plan_small_products(plan, ctx, DType::kF32, {{64, 16, 16, 1, true}}, "auto", 2, false);
  EXPECT_EQ(plan.ways.small_products_f32, SmallProductsWay::kTiles);
  EXPECT_FALSE(plan.small_products[0].measured);
  EXPECT_NE(plan.small_products_how.find("MFLOP per step is too little to time: the tiles"),
            std::string::npos)
      << plan.small_products_how;
  // No choice: products in bf16, or none the tiles take.
  plan_small_products(plan, ctx, DType::kBF16, w1_products(), "onednn", 2, false);
  EXPECT_TRUE(plan.small_products.empty());
  EXPECT_EQ(plan.ways.small_products_f32, SmallProductsWay::kTiles);
  plan_small_products(plan, ctx, DType::kF32, {{4096, 768, 50304, 1, true}}, "auto", 2, false);
  EXPECT_TRUE(plan.small_products.empty());
  EXPECT_EQ(plan.describe(), "");
  try {
    plan_small_products(plan, ctx, DType::kF32, w1_products(), "amx", 2, false);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("kernel_choice = 'amx': expected 'auto'"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace nanogpt
