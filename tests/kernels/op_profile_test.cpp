// OpProfile's table: shares of step time, throughput and % of peak per op class, "other" for the
// untimed rest; and the Backend seam charging each op to its class only when a profile is attached.
#include "kernels/op_profile.h"

#include <gtest/gtest.h>

#include <vector>

#include "kernels/backend.h"
#include "kernels/compute_peaks.h"
#include "kernels/cpu_backend.h"

namespace nanogpt {
namespace {

ComputePeaks peaks(DType dtype, double fp32, double bf16_dot, double matmul) {
  ComputePeaks p;
  p.dtype = dtype;
  p.fp32_fma.flops_per_s = fp32;
  p.bf16_dot.flops_per_s = bf16_dot;
  p.lowp_matmul.flops_per_s = matmul;
  return p;
}

TEST(OpProfile, TableShowsShareThroughputAndPercentOfPeak) {
  OpProfile p;
  // One step of 2 s: a compute-bound matmul (1 s, 4e9 FLOPs over 1e6 bytes) and a memory-bound
  // norm (0.5 s, 1e9 bytes).
  p.add(OpClass::kMatmul, 1.0, 4e9, 1e6);
  p.add(OpClass::kNorm, 0.5, 1e6, 1e9);
  p.add_step(2.0);
  const std::string t = p.table(peaks(DType::kF32, 1e10, 0, 0), /*peak_bytes_per_s=*/4e9);
  EXPECT_NE(t.find("profile over 1 steps (2000.0 ms/step"), std::string::npos) << t;
  EXPECT_NE(t.find("matmul          1000.00   50.0%        1  4.0 GFLOP/s       40% compute"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("norm             500.00   25.0%        1     2.0 GB/s       50% memory"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("other            500.00   25.0%"), std::string::npos) << t;
  EXPECT_EQ(t.find("attention"), std::string::npos) << t;  // classes never called are left out
}

TEST(OpProfile, Bf16PeakIsTheBarOfTheProductClassesOnly) {
  OpProfile p;
  // 4 GFLOP/s of matmul and attention, 2 GB/s of norm, against 10 GFLOP/s fp32 and 20 GFLOP/s of
  // bf16 dot products: the products read 20%, the norm its bandwidth share as before.
  p.add(OpClass::kMatmul, 1.0, 4e9, 1e6);
  p.add(OpClass::kAttention, 0.25, 1e9, 1e6);
  p.add(OpClass::kNorm, 0.5, 1e6, 1e9);
  p.add_step(2.0);
  const std::string t = p.table(peaks(DType::kBF16, 1e10, 2e10, 1.5e10), 4e9);
  EXPECT_NE(t.find("10.0 GFLOP/s fp32, 20.0 GFLOP/s bf16 dot products"), std::string::npos) << t;
  EXPECT_NE(t.find("matmul          1000.00   50.0%        1  4.0 GFLOP/s       20% compute"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("attention        250.00   12.5%        1  4.0 GFLOP/s       20% compute"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("norm             500.00   25.0%        1     2.0 GB/s       50% memory"),
            std::string::npos)
      << t;
  EXPECT_EQ(p.table(peaks(DType::kF32, 1e10, 0, 0), 4e9).find("bf16"),
            std::string::npos);  // fp32 runs: one FLOP peak
}

// Where oneDNN's matmuls run on a faster unit than any kernel of ours (AMX), the matmul and
// classifier rows are against its measured rate, attention against the bf16 dot products.
TEST(OpProfile, MatmulsAreMeasuredAgainstTheirOwnUnit) {
  OpProfile p;
  p.add(OpClass::kMatmul, 1.0, 4e9, 1e6);
  p.add(OpClass::kAttention, 0.25, 1e9, 1e6);
  p.add_step(2.0);
  const std::string t = p.table(peaks(DType::kBF16, 1e10, 2e10, 8e10), 4e9);
  EXPECT_NE(t.find("80.0 GFLOP/s bfloat16 matmul (oneDNN)"), std::string::npos) << t;
  EXPECT_NE(t.find("matmul          1000.00   50.0%        1  4.0 GFLOP/s        5% compute"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("attention        250.00   12.5%        1  4.0 GFLOP/s       20% compute"),
            std::string::npos)
      << t;
}

// The optimizer's FLOPs are Muon's Newton-Schulz products: bf16 matmuls in a bf16 run, so its row
// is against the matmul unit there (it read 104% of the fp32 peak in the CPU speedrun's profile),
// float32 ones elsewhere (float16 runs included).
TEST(OpProfile, OptimizerFlopsAreMeasuredAgainstTheUnitNewtonSchulzRunsOn) {
  OpProfile p;
  p.add(OpClass::kOptimizer, 1.0, 4e9, 1e6);
  p.add_step(2.0);
  std::string t = p.table(peaks(DType::kBF16, 1e10, 2e10, 1.5e10), 4e9);
  EXPECT_NE(t.find("(the % of matmul, attention, classifier and optimizer)"), std::string::npos)
      << t;
  EXPECT_NE(t.find("optimizer       1000.00   50.0%        1  4.0 GFLOP/s       20% compute"),
            std::string::npos)
      << t;
  t = p.table(peaks(DType::kBF16, 1e10, 2e10, 8e10), 4e9);  // oneDNN on AMX
  EXPECT_NE(t.find("(matmul's, classifier's and optimizer's %)"), std::string::npos) << t;
  EXPECT_NE(t.find("optimizer       1000.00   50.0%        1  4.0 GFLOP/s        5% compute"),
            std::string::npos)
      << t;
  t = p.table(peaks(DType::kF16, 1e10, 0, 8e10), 4e9);
  EXPECT_NE(t.find("(matmul's and classifier's %)"), std::string::npos) << t;
  EXPECT_NE(t.find("optimizer       1000.00   50.0%        1  4.0 GFLOP/s       40% compute"),
            std::string::npos)
      << t;
}

TEST(OpProfile, BackendChargesOpsToTheirClassOnlyWhenAttached) {
  CpuBackend ctx;
  const int64_t N = 8;
  const int C = 16, OC = 32;
  std::vector<float> x(N * C, 0.5f), w(OC * C, 0.25f), y(N * OC), dy(N * OC, 1.0f);
  std::vector<float> dx(N * C), dw(OC * C);
  Backend& ops = ctx;
  ops.matmul_forward(y.data(), x.data(), w.data(), nullptr, N, C, OC);  // no profile: no-op
  OpProfile p;
  {
    const ProfileScope profiled(ops, &p);
    ops.matmul_forward(y.data(), x.data(), w.data(), nullptr, N, C, OC);
    EXPECT_FLOAT_EQ(y[0], 0.5f * 0.25f * C);
    {
      const MatmulClassScope head(ops, OpClass::kClassifier);
      ops.matmul_backward(dx.data(), dw.data(), nullptr, dy.data(), x.data(), w.data(), N, C, OC);
    }
    ops.gelu_forward(y.data(), y.data(), N * OC, MlpActivation::kTanh);
  }
  EXPECT_EQ(ops.profile(), nullptr);  // the scope put back what was there
  EXPECT_EQ(ops.matmul_class(), OpClass::kMatmul);
  ops.gelu_forward(y.data(), y.data(), N * OC, MlpActivation::kTanh);  // not profiled
  EXPECT_EQ(p.stats(OpClass::kMatmul).calls, 1);
  EXPECT_DOUBLE_EQ(p.stats(OpClass::kMatmul).flops, 2.0 * N * C * OC);
  EXPECT_EQ(p.stats(OpClass::kClassifier).calls, 1);
  EXPECT_DOUBLE_EQ(p.stats(OpClass::kClassifier).flops, 4.0 * N * C * OC);  // dinp and dweight
  EXPECT_EQ(p.stats(OpClass::kElementwise).calls, 1);
  EXPECT_GT(p.stats(OpClass::kMatmul).seconds, 0.0);
  // The table's per-op rows name the Backend's methods, under the class each was charged to.
  p.add_step(1e-9);  // a step no op can be under 0.5% of
  const std::string t = p.table(peaks(DType::kF32, 1e10, 0, 0), 4e9);
  EXPECT_NE(t.find("op (class)"), std::string::npos) << t;
  EXPECT_NE(t.find("matmul_forward (matmul)"), std::string::npos) << t;
  EXPECT_NE(t.find("matmul_backward (classifier)"), std::string::npos) << t;
  EXPECT_NE(t.find("gelu_forward (elementwise)"), std::string::npos) << t;
}

TEST(OpProfile, PerOpRowsSumIntoTheirClassAndSmallOnesAreLeftOut) {
  OpProfile p;
  p.add(OpClass::kElementwise, "gelu_forward", 0.25, 0, 1e9);
  p.add(OpClass::kElementwise, "gelu_forward", 0.25, 0, 1e9);
  p.add(OpClass::kElementwise, "dropout_forward", 0.6, 0, 4.8e9);
  p.add(OpClass::kElementwise, "fill_zero", 0.001, 0, 1e6);  // 0.05% of the step: no row
  p.add(OpClass::kMatmul, 1.0, 4e9, 1e6);                    // unnamed: its class row only
  p.add_step(4.0);
  const std::string t = p.table(peaks(DType::kF32, 1e10, 0, 0), 4e9);
  EXPECT_EQ(p.stats(OpClass::kElementwise).calls, 4);
  EXPECT_NE(t.find("elementwise     1101.00   27.5%        4"), std::string::npos) << t;
  // Largest first within the class: dropout (0.6 s, 4.8 GB: 8 GB/s) above gelu (2 x 0.25 s).
  const size_t dropout = t.find(
      "dropout_forward (elementwise)                    600.00   15.0%  "
      "      1     8.0 GB/s      200% memory");
  const size_t gelu = t.find(
      "gelu_forward (elementwise)                       500.00   12.5%  "
      "      2     4.0 GB/s      100% memory");
  EXPECT_NE(dropout, std::string::npos) << t;
  EXPECT_NE(gelu, std::string::npos) << t;
  EXPECT_LT(dropout, gelu) << t;
  EXPECT_EQ(t.find("fill_zero"), std::string::npos) << t;
}

}  // namespace
}  // namespace nanogpt
