// Test helper: n token ids uniform in [0, V), a pure function of seed (core/rng.h). Shared by the
// model and MPI tests that feed a GPT random batches.
#pragma once

#include <cstdint>
#include <vector>

#include "core/rng.h"

namespace nanogpt::testing {

inline std::vector<int> random_tokens(int64_t n, int V, uint64_t seed) {
  Rng rng(seed);
  std::vector<int> t(static_cast<size_t>(n));
  for (int& x : t) x = static_cast<int>(rng.uniform_int(static_cast<uint64_t>(V)));
  return t;
}

}  // namespace nanogpt::testing
