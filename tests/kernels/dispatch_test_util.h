// for_each_target: runs a kernel test once per Highway target this CPU supports and this build
// compiled, with the dispatch forced to it, so the lower targets (AVX2, SSE4, baseline) are tested
// on a higher CPU; the uncapped choice comes back when the test ends.
#pragma once

#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <string>

#include "core/cpu_target.h"

namespace nanogpt::testing {

// Restores Highway's uncapped choice when it goes out of scope.
struct UncapOnExit {
  ~UncapOnExit() {
    hwy::SetSupportedTargetsForTest(0);
    CpuTarget("").apply();
  }
};

// body(name) once per target (Highway's name: "AVX3_DL", "AVX2", "SSE4", "EMU128", ...).
template <class Body>
void for_each_target(Body&& body) {
  UncapOnExit restore;
  for (int64_t t : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(t);
    hwy::GetChosenTarget().Update(hwy::SupportedTargets());
    ASSERT_EQ(dispatched_hwy_target(), hwy::TargetName(t));
    SCOPED_TRACE(std::string("target ") + hwy::TargetName(t));
    body(std::string(hwy::TargetName(t)));
  }
}

}  // namespace nanogpt::testing
