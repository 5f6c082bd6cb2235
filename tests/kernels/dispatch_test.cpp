// Runtime dispatch: the CpuTarget levels and the NANOGPT_CPU_TARGET cap (names, errors, what
// Highway then runs), and every dispatched kernel against its scalar reference on every target
// this machine can run (ForEachTarget), so the lower targets are tested on a higher CPU.
#include <gtest/gtest.h>
#include <hwy/targets.h>
#if defined(__aarch64__)
#include <sys/prctl.h>  // PR_SVE_GET_VL
#endif

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <tuple>
#include <vector>

#include "core/check.h"
#include "core/cpu_target.h"
#include "dispatch_test_util.h"
#include "kernel_test_util.h"
#include "kernels/ops.h"

namespace nanogpt {
namespace {

using testing::for_each_target;
using testing::UncapOnExit;

TEST(CpuTarget, UnknownCapIsAnErrorListingTheNames) {
  try {
    CpuTarget t("avx9000");
    FAIL() << "accepted avx9000";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("NANOGPT_CPU_TARGET='avx9000'"), std::string::npos) << what;
    for (const auto& level : CpuTarget::all_levels()) {
      EXPECT_NE(what.find(level.name), std::string::npos) << what;
    }
  }
}

TEST(CpuTarget, BaselineIsAlwaysCompiledAndRunnable) {
  const CpuTarget t("baseline");
  EXPECT_EQ(t.chosen(), "baseline");
  const auto compiled = t.compiled();
  ASSERT_FALSE(compiled.empty());
  EXPECT_EQ(compiled.front(), "baseline");
  EXPECT_EQ(t.runnable().front(), "baseline");
}

TEST(CpuTarget, UncappedChoosesTheBestRunnableLevel) {
  const CpuTarget t("");
  EXPECT_EQ(t.chosen(), t.runnable().back());
  EXPECT_EQ(t.has_bf16_dot(), t.chosen() == "avx512_bf16" || t.chosen() == "avx512_spr");
  EXPECT_EQ(t.has_bf16_dot(), cpu_has_avx512_bf16() && t.chosen() != "avx512");
}

TEST(CpuTarget, EachCapRunsThatLevelOrTheBestBelowIt) {
  UncapOnExit restore;
  const std::vector<std::string> runnable = CpuTarget("").runnable();
  for (const auto& level : CpuTarget::all_levels()) {
    const CpuTarget t(level.name);
    EXPECT_EQ(t.cap(), level.name);
    if (std::find(runnable.begin(), runnable.end(), level.name) != runnable.end()) {
      EXPECT_EQ(t.chosen(), level.name);
    }
    t.apply();
    // What Highway dispatches to is the level's own target (the bf16 levels share AVX3_DL's code).
    EXPECT_EQ(dispatched_hwy_target(), t.hwy_target_name()) << level.name;
    EXPECT_NE(t.describe().find("capped by NANOGPT_CPU_TARGET=" + level.name), std::string::npos);
  }
}

// cap_allows_bf16_dot reads the cap without asking the CPU (have_bf16_dot_products calls it per
// kernel call), and agrees with what a CpuTarget with that cap says wherever the CPU has the level.
TEST(CpuTarget, CapAllowsBf16DotAgreesWithTheLevels) {
  struct EnvCap {  // sets NANOGPT_CPU_TARGET for a scope, then puts back what was there
    std::string old;
    bool had;
    explicit EnvCap(const char* v) {
      const char* o = std::getenv(CpuTarget::kCapVariable);
      had = o != nullptr;
      if (had) old = o;
      if (v) {
        setenv(CpuTarget::kCapVariable, v, 1);
      } else {
        unsetenv(CpuTarget::kCapVariable);
      }
    }
    ~EnvCap() {
      if (had) {
        setenv(CpuTarget::kCapVariable, old.c_str(), 1);
      } else {
        unsetenv(CpuTarget::kCapVariable);
      }
    }
  };
  EnvCap unset(nullptr);
  EXPECT_TRUE(CpuTarget::cap_allows_bf16_dot());
  {
    EnvCap empty("");
    EXPECT_TRUE(CpuTarget::cap_allows_bf16_dot());
  }
  for (const auto& level : CpuTarget::all_levels()) {
    EnvCap cap(level.name.c_str());
    EXPECT_EQ(CpuTarget::cap_allows_bf16_dot(), level.bf16_dot) << level.name;
    const CpuTarget t(level.name);
    if (t.chosen() == level.name) EXPECT_EQ(CpuTarget::cap_allows_bf16_dot(), t.has_bf16_dot());
  }
  EnvCap unknown("avx9000");
  try {
    CpuTarget::cap_allows_bf16_dot();
    FAIL() << "accepted avx9000";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("NANOGPT_CPU_TARGET='avx9000'"), std::string::npos);
  }
}

// Floats in one of this CPU's SVE vectors (0 without SVE): the width of Highway's SVE and SVE2
// targets, known only at run time (Linux's vector length of this thread, in bytes).
double sve_float_lanes() {
#if defined(__aarch64__) && defined(PR_SVE_GET_VL)
  const int vl = prctl(PR_SVE_GET_VL);
  return vl < 0 ? 0 : (vl & PR_SVE_VL_LEN_MASK) / 4;
#else
  return 0;
#endif
}

TEST(DispatchedProbes, FmaProbeRunsAtEachTargetsWidth) {
  for_each_target([](const std::string& target) {
    const double lanes = target.rfind("AVX3", 0) == 0          ? 16
                         : target == "AVX2" || target == "SVE_256" ? 8
                         : target == "SVE" || target == "SVE2"  ? sve_float_lanes()
                         : target == "SCALAR"                   ? 1
                                                                : 4;  // SSE4, EMU128, NEON, SVE2_128
    EXPECT_EQ(fma_probe_flops(1000, 1.0f), 1000 * 12 * 2 * lanes) << target;
  });
}

TEST(DispatchedKernels, ResidualMatchesTheReferenceOnEveryTarget) {
  for (int64_t n : {1, 7, 16, 4099, 70000}) {
    const auto a = testing::random_normal(n, 1), b = testing::random_normal(n, 2);
    const auto g = testing::random_normal(n, 3);
    std::vector<float> want(n), want_da = a, want_db = b;
    ref::residual_forward(want.data(), a.data(), b.data(), n);
    ref::residual_backward(want_da.data(), want_db.data(), g.data(), n);
    for_each_target([&](const std::string& target) {
      std::vector<float> out(n, -1.0f), da = a, db = b;
      cpu::residual_forward(out.data(), a.data(), b.data(), n);
      cpu::residual_backward(da.data(), db.data(), g.data(), n);
      EXPECT_EQ(out, want) << target << " n " << n;  // one rounding each: the same bits
      EXPECT_EQ(da, want_da) << target << " n " << n;
      EXPECT_EQ(db, want_db) << target << " n " << n;
    });
  }
}

// The U-net skip: out = x + w * skip (one rounding with FMA, two without: within an ulp of each
// term of the reference's double sum), dskip = w * dout (one rounding each: the same bits), and the
// weight's gradient within float accumulation's error of the double sum, the same on 1 and 2
// threads.
TEST(DispatchedKernels, SkipMatchesTheReferenceOnEveryTarget) {
  for (int64_t n : {1, 7, 16, 4099, 70000}) {
    const auto x = testing::random_normal(n, 1), skip = testing::random_normal(n, 2);
    const auto g = testing::random_normal(n, 3);
    const float w = 0.7f;
    std::vector<float> want(n), want_dskip(n);
    ref::skip_forward(want.data(), x.data(), skip.data(), w, n);
    const double want_dw = ref::skip_backward(want_dskip.data(), g.data(), skip.data(), w, n);
    for_each_target([&](const std::string& target) {
      double dw_one_thread = 0;
      for (int threads : {1, 2}) {
        testing::ScopedOmpThreads omp(threads);
        std::vector<float> out(n, -1.0f), dskip(n, -1.0f);
        cpu::skip_forward(out.data(), x.data(), skip.data(), w, n);
        const double dw = cpu::skip_backward(dskip.data(), g.data(), skip.data(), w, n);
        for (int64_t i = 0; i < n; ++i) {
          // (targets without FMA round the product too: an ulp of each term)
          const double scale = std::fabs(x[i]) + std::fabs(w * skip[i]);
          ASSERT_NEAR(out[i], want[i], 1.2e-7 * scale) << target << " n " << n;
        }
        EXPECT_EQ(dskip, want_dskip) << target << " n " << n;
        EXPECT_NEAR(dw, want_dw, 1e-5 * std::sqrt(static_cast<double>(n))) << target;
        if (threads == 1) dw_one_thread = dw;
        EXPECT_EQ(dw, dw_one_thread) << target << " n " << n << ": thread count changed dw";
      }
      std::vector<float> inplace = x;  // out aliasing x
      cpu::skip_forward(inplace.data(), inplace.data(), skip.data(), w, n);
      std::vector<float> out(n);
      cpu::skip_forward(out.data(), x.data(), skip.data(), w, n);
      EXPECT_EQ(inplace, out) << target << " n " << n;
    });
  }
}

TEST(DispatchedKernels, EncoderMatchesTheReferenceOnEveryTarget) {
  for (auto [B, T, C, V] : {std::tuple{1, 1, 5, 3}, {2, 7, 24, 11}, {3, 64, 200, 50}}) {
    const auto wte = testing::random_normal(size_t(V) * C, 4),
               wpe = testing::random_normal(size_t(T) * C, 5);
    const auto dout = testing::random_normal(size_t(B) * T * C, 6);
    std::vector<int> inp(size_t(B) * T);
    for (size_t i = 0; i < inp.size(); ++i) inp[i] = static_cast<int>((i * 7 + 3) % V);  // repeats
    std::vector<float> want(dout.size()), want_dwte = wte, want_dwpe = wpe;
    ref::encoder_forward(want.data(), inp.data(), wte.data(), wpe.data(), B, T, C);
    ref::encoder_backward(want_dwte.data(), want_dwpe.data(), dout.data(), inp.data(), B, T, C);
    for_each_target([&](const std::string& target) {
      for (int threads : {1, 2}) {
        testing::ScopedOmpThreads omp(threads);
        std::vector<float> out(dout.size(), -1.0f), dwte = wte, dwpe = wpe;
        cpu::encoder_forward(out.data(), inp.data(), wte.data(), wpe.data(), B, T, C);
        cpu::encoder_backward(dwte.data(), dwpe.data(), dout.data(), inp.data(), B, T, C);
        // Each element is the same sum in the same order: the same bits.
        EXPECT_EQ(out, want) << target << " C " << C;
        EXPECT_EQ(dwte, want_dwte) << target << " C " << C << " threads " << threads;
        EXPECT_EQ(dwpe, want_dwpe) << target << " C " << C << " threads " << threads;
      }
    });
  }
}

TEST(DispatchedKernels, DropoutMatchesTheReferenceOnEveryTarget) {
  for (float p : {0.0f, 0.2f}) {
    const int64_t n = 5003;
    const auto x = testing::random_normal(n, 7), g = testing::random_normal(n, 8);
    const auto acc = testing::random_normal(n, 9);
    std::vector<float> want(n), want_dinp = acc;
    ref::dropout_forward(want.data(), x.data(), n, p, 42);
    ref::dropout_backward(want_dinp.data(), g.data(), n, p, 42);
    for_each_target([&](const std::string& target) {
      std::vector<float> out(n, -1.0f), dinp = acc;
      cpu::dropout_forward(out.data(), x.data(), n, p, 42);
      cpu::dropout_backward(dinp.data(), g.data(), n, p, 42);
      EXPECT_EQ(out, want) << target << " p " << p;  // one product per element: the same bits
      // dinp += dout * keep: one fused rounding on FMA targets, two without (baseline, SSE4), so
      // within one rounding of each term of the reference's.
      const float scale = 1.0f / (1.0f - p);
      for (int64_t i = 0; i < n; ++i) {
        const double tol =
            testing::kEps * (std::fabs(double{acc[i]}) + std::fabs(double{g[i]}) * scale);
        ASSERT_NEAR(dinp[i], want_dinp[i], tol) << target << " p " << p << " i " << i;
      }
    });
  }
}

}  // namespace
}  // namespace nanogpt
