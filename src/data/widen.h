// widen_tokens: uint16 token ids -> int32, the loader's one copy loop (compiles to vpmovzxwd; no
// per-element branches).
#pragma once

#include <cstdint>

namespace nanogpt {

inline void widen_tokens(int32_t* __restrict out, const uint16_t* __restrict in, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<int32_t>(in[i]);
}

}  // namespace nanogpt
