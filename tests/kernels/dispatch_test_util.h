// for_each_target: runs a kernel test once per Highway target this CPU supports and this build
// compiled, with the dispatch forced to it, so the lower targets (AVX2, SSE4, baseline) are tested
// on a higher CPU; the choice of the run (NANOGPT_CPU_TARGET's cap, if any) comes back when the
// test ends. NANOGPT_TEST_SKIP_TARGETS (Highway names, e.g. "NEON EMU128") leaves targets out:
// scripts/test_arm64.sh's emulated SVE run skips those its NEON run tests.
#pragma once

#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <cstdlib>
#include <string>

#include "core/cpu_target.h"

namespace nanogpt::testing {

// Restores Highway's choice for this run (the environment's cap, if any) when it goes out of scope.
struct UncapOnExit {
  ~UncapOnExit() {
    hwy::SetSupportedTargetsForTest(0);
    CpuTarget::from_environment().apply();
  }
};

// Whether NANOGPT_TEST_SKIP_TARGETS names Highway target `name` (space- or comma-separated).
inline bool target_skipped(const std::string& name) {
  const char* v = std::getenv("NANOGPT_TEST_SKIP_TARGETS");
  if (v == nullptr) return false;
  std::string list(v);
  for (char& c : list) c = c == ',' ? ' ' : c;
  return (" " + list + " ").find(" " + name + " ") != std::string::npos;
}

// body(name) once per target (Highway's name: "AVX3_DL", "AVX2", "SSE4", "EMU128", ...).
template <class Body>
void for_each_target(Body&& body) {
  UncapOnExit restore;
  for (int64_t t : hwy::SupportedAndGeneratedTargets()) {
    if (target_skipped(hwy::TargetName(t))) continue;
    hwy::SetSupportedTargetsForTest(t);
    hwy::GetChosenTarget().Update(hwy::SupportedTargets());
    ASSERT_EQ(dispatched_hwy_target(), hwy::TargetName(t));
    SCOPED_TRACE(std::string("target ") + hwy::TargetName(t));
    body(std::string(hwy::TargetName(t)));
  }
}

}  // namespace nanogpt::testing
