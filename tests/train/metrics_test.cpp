// MFU as the trainer reports it: nanoGPT's FLOPs per token, the utilization arithmetic, the peak it
// is taken against for each dtype (metrics.h mfu_peak_for, kernels/compute_peaks.h), and the
// measured peaks behind it
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

ComputePeaks peaks(DType dtype, PeakFlops fp32, PeakFlops bf16_dot, PeakFlops matmul) {
  ComputePeaks p;
  p.dtype = dtype;
  p.fp32_fma = fp32;
  p.bf16_dot = bf16_dot;
  p.lowp_matmul = matmul;
  return p;
}

TEST(Mfu, PeakIsThatOfTheUnitTheMatmulsRunOn) {
  const PeakFlops fp32{400e9, 2, false}, bf16{800e9, 2, true}, none{};
  const PeakFlops dnnl_slow{700e9, 2, false}, amx{2400e9, 2, true}, widened{300e9, 2, false};
  // bfloat16 with bf16 dot products where oneDNN's matmul is slower than them (AVX512_BF16):
  // their peak, so a bf16 run cannot read above 100%.
  MfuPeak p = mfu_peak_for(peaks(DType::kBF16, fp32, bf16, dnnl_slow));
  EXPECT_EQ(p.flops_per_s, 800e9);
  EXPECT_EQ(p.arithmetic, "bf16 dot products");
  EXPECT_TRUE(p.from_cache);
  // oneDNN's matmul faster than any arithmetic of ours (AMX tiles): its measured rate.
  p = mfu_peak_for(peaks(DType::kBF16, fp32, bf16, amx));
  EXPECT_EQ(p.flops_per_s, 2400e9);
  EXPECT_EQ(p.arithmetic, "bfloat16 matmul (oneDNN)");
  EXPECT_TRUE(p.from_cache);
  // bfloat16 on a CPU without them widens to fp32 FMAs.
  p = mfu_peak_for(peaks(DType::kBF16, fp32, none, widened));
  EXPECT_EQ(p.flops_per_s, 400e9);
  EXPECT_EQ(p.arithmetic, "fp32 FMA");
  // float32, and float16 whose products widen to fp32 (its matmul slower than the FMA peak).
  EXPECT_EQ(mfu_peak_for(peaks(DType::kF32, fp32, none, none)).flops_per_s, 400e9);
  EXPECT_EQ(mfu_peak_for(peaks(DType::kF16, fp32, none, widened)).flops_per_s, 400e9);
  EXPECT_FALSE(mfu_peak_for(peaks(DType::kF16, fp32, none, widened)).from_cache);
}

// The measured matmul probe: run here for real (bf16 and fp16 through our matmul op), its MFU
// peak is never below the arithmetic's, and its own reading is positive and below ten times the
// fp32 peak (a unit that is not there would not be measured).
TEST(Mfu, MeasuredPeaksOfA16BitRun) {
  for (const DType t : {DType::kBF16, DType::kF16}) {
    const ComputePeaks p = measure_compute_peaks(t, 2, /*use_cache=*/false);
    EXPECT_GT(p.fp32_fma.flops_per_s, 0.0);
    EXPECT_GT(p.lowp_matmul.flops_per_s, 0.0);
    EXPECT_LT(p.lowp_matmul.flops_per_s, 10 * p.fp32_fma.flops_per_s);
    EXPECT_GE(p.matmul(), p.arithmetic());
    EXPECT_EQ(p.for_op_class(OpClass::kMatmul), p.matmul());
    EXPECT_EQ(p.for_op_class(OpClass::kAttention), p.arithmetic());
    EXPECT_EQ(p.for_op_class(OpClass::kNorm), p.fp32_fma.flops_per_s);
    // Muon's Newton-Schulz: bf16 matmuls in bf16 runs, float32 in float16 runs.
    EXPECT_EQ(p.for_op_class(OpClass::kOptimizer),
              t == DType::kBF16 ? p.matmul() : p.fp32_fma.flops_per_s);
  }
  EXPECT_EQ(measure_compute_peaks(DType::kF32, 2, false).lowp_matmul.flops_per_s, 0.0);
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
