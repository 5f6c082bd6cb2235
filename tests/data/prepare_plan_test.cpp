// Tests of PreparePlan: what it plans fits the budget for any budget and thread count, blocks and
// word caches grow with the budget up to their caps, and a budget too small names the least that
// works.
#include "data/prepare_plan.h"

#include <gtest/gtest.h>

#include "core/check.h"

namespace nanogpt {
namespace {

TEST(PreparePlan, FitsTheBudget) {
  for (int64_t mib : {16, 32, 64, 100, 256, 1024, 4096}) {
    for (int threads : {1, 2, 4, 16}) {
      for (bool gpt2 : {false, true}) {
        const int64_t budget = mib << 20;
        PreparePlan p;
        try {
          p = plan_prepare(budget, threads, gpt2);
        } catch (const Error&) {
          EXPECT_LE(mib, 64) << "only small budgets may be refused (" << threads << " threads)";
          continue;
        }
        SCOPED_TRACE(p.describe());
        EXPECT_LE(p.planned_bytes(), budget);
        EXPECT_GE(p.block_bytes, kMinBlockBytes);
        EXPECT_EQ(p.slots, 2 * threads + 2);
        EXPECT_EQ(p.word_cache_bytes > 0, gpt2);
      }
    }
  }
  const PreparePlan small = plan_prepare(int64_t{64} << 20, 2, true);
  const PreparePlan large = plan_prepare(int64_t{1} << 30, 2, true);
  EXPECT_LT(small.block_bytes, large.block_bytes);
  EXPECT_LT(small.word_cache_bytes, large.word_cache_bytes);
}

TEST(PreparePlan, TooSmallABudgetNamesTheLeastThatWorks) {
  try {
    plan_prepare(int64_t{4} << 20, 8, true);
    FAIL();
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("memory_budget = 4.0 MiB is too small for 8 thread(s)"), std::string::npos)
        << what;
    EXPECT_NE(what.find("needs at least"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace nanogpt
