// When a short kernel is worth an OpenMP parallel region (internal to kernels/cpu). Opening a region
// wakes the other threads and joins them at its end: measured here ~20 us with sleeping threads
// (OMP_WAIT_POLICY=PASSIVE) and worse with spinning ones on a loaded machine, while one thread
// streams a 100K-float elementwise pass in ~10 us. Small models (nanoGPT's CPU recipe: B*T*C =
// 98K) run ~100 such regions per step, so their LayerNorms, residual adds, embeddings and
// cross-entropies run on the calling thread below kMinParallelFloats floats moved
// (`#pragma omp parallel ... if(worth_parallel(n))`). The kernels using it compute each output
// element the same way on any number of threads (reductions keep their per-thread partition, see
// layernorm_impl.h), so the choice never changes a result.
#pragma once

#include <cstdint>

namespace nanogpt::cpu {

// Floats read + written below which a single pass runs on the calling thread.
inline constexpr int64_t kMinParallelFloats = int64_t{1} << 19;  // 2 MB

inline bool worth_parallel(int64_t floats_moved) { return floats_moved >= kMinParallelFloats; }

}  // namespace nanogpt::cpu
