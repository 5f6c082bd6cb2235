// MFU as the trainer reports it: nanoGPT's FLOPs per token, the utilization arithmetic, the peak it
// is taken against for each dtype (metrics.h mfu_peak_for), and the measured peaks behind it
// (core/cpu_info: one cached best value per probe, so a bf16 probe never overwrites the fp32 one).
#include "train/metrics.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "../data/temp_dir.h"
#include "core/cpu_info.h"
#include "core/cpu_target.h"

namespace nanogpt {
namespace {

TEST(Mfu, NanoGptFlopsPerTokenAndUtilization) {
  ModelConfig c;
  c.n_layer = 2;
  c.n_head = 4;
  c.n_embd = 64;  // head size 16
  c.block_size = 32;
  // 6N + 12 * L * H * Q * T = 6 * 1000 + 12 * 2 * 4 * 16 * 32
  EXPECT_DOUBLE_EQ(flops_per_token(c, 1000), 6000.0 + 49152.0);
  // 1e6 FLOPs per token, 500 tokens in 0.5 s = 1e9 FLOP/s against a 4e9 peak.
  EXPECT_DOUBLE_EQ(model_flops_utilization(1e6, 500, 0.5, 4e9), 0.25);
  EXPECT_EQ(model_flops_utilization(1e6, 500, 0.0, 4e9), 0.0);  // no time measured yet
  EXPECT_EQ(model_flops_utilization(1e6, 500, 0.5, 0.0), 0.0);  // no peak measured
}

TEST(Mfu, PeakIsThatOfTheArithmeticTheProductsRunIn) {
  const PeakFlops fp32{400e9, 2, false}, bf16{800e9, 2, true}, none{};
  // bfloat16 with bf16 dot products: their peak, so a bf16 run cannot read above 100%.
  MfuPeak p = mfu_peak_for(DType::kBF16, fp32, bf16);
  EXPECT_EQ(p.flops_per_s, 800e9);
  EXPECT_EQ(p.arithmetic, "bf16 dot products");
  EXPECT_TRUE(p.from_cache);
  // bfloat16 on a CPU without them widens to fp32 FMAs.
  p = mfu_peak_for(DType::kBF16, fp32, none);
  EXPECT_EQ(p.flops_per_s, 400e9);
  EXPECT_EQ(p.arithmetic, "fp32 FMA");
  // float32, and float16 (no fp16 arithmetic here: its products widen to fp32).
  EXPECT_EQ(mfu_peak_for(DType::kF32, fp32, bf16).flops_per_s, 400e9);
  EXPECT_EQ(mfu_peak_for(DType::kF16, fp32, bf16).flops_per_s, 400e9);
  EXPECT_FALSE(mfu_peak_for(DType::kF16, fp32, bf16).from_cache);
}

TEST(PeakProbe, Bf16DotPeakIsMeasuredWhereTheBuildAndCpuHaveBf16) {
  testing::TempDir dir;
  const PeakFlops bf16 =
      measure_peak_flops(1, dir.path(), /*use_cache=*/false, PeakProbe::kBf16Dot);
  if (have_bf16_dot_products()) {
    EXPECT_GT(bf16.flops_per_s, 0.0);
  } else {
    EXPECT_EQ(bf16.flops_per_s, 0.0);
  }
  EXPECT_FALSE(std::ifstream(dir.file("peak_flops.json")).good());  // use_cache=false writes none
}

TEST(PeakProbe, EachProbeKeepsItsOwnBestValueInTheCache) {
  testing::TempDir dir;
  const PeakFlops fp32 = measure_peak_flops(1, dir.path());
  ASSERT_GT(fp32.flops_per_s, 0.0);
  EXPECT_FALSE(fp32.from_cache);  // nothing cached yet
  nlohmann::json cache;
  std::ifstream(dir.file("peak_flops.json")) >> cache;
  ASSERT_EQ(cache.size(), 1u);
  const std::string fp32_key = cache.begin().key();
  // "<cpu> | <simd> | threads N | <the Highway target the probe ran at>"
  const std::string base = fp32_key.substr(0, fp32_key.rfind(" | "));
  EXPECT_EQ(fp32_key, base + " | " + dispatched_hwy_target());

  // A value far above any probe stands for a better day: it is returned, marked as cached.
  cache[fp32_key] = 1e18;
  std::ofstream(dir.file("peak_flops.json")) << cache.dump();
  const PeakFlops best = measure_peak_flops(1, dir.path());
  EXPECT_EQ(best.flops_per_s, 1e18);
  EXPECT_TRUE(best.from_cache);

  const PeakFlops bf16 = measure_peak_flops(1, dir.path(), true, PeakProbe::kBf16Dot);
  std::ifstream(dir.file("peak_flops.json")) >> cache;
  EXPECT_EQ(cache[fp32_key].get<double>(), 1e18);  // the bf16 probe leaves the fp32 entry alone
  if (have_bf16_dot_products()) {
    EXPECT_LT(bf16.flops_per_s, 1e18);
    ASSERT_EQ(cache.size(), 2u);
    EXPECT_EQ(cache[base + " | bf16 dot products"].get<double>(), bf16.flops_per_s);
  } else {
    EXPECT_EQ(bf16.flops_per_s, 0.0);
    EXPECT_EQ(cache.size(), 1u);
  }
}

}  // namespace
}  // namespace nanogpt
