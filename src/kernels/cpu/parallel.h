// When a short kernel is worth an OpenMP parallel region (internal to kernels/cpu). Opening a region
// wakes the other threads and joins them at its end: ~20 us with sleeping threads
// (OMP_WAIT_POLICY=PASSIVE), a few us with libgomp's default (threads spin a while before they
// sleep), while one thread streams a 100K-float elementwise pass in ~10 us. So LayerNorms, residual
// adds, embeddings and cross-entropies run on the calling thread below kMinParallelFloats floats
// moved (`#pragma omp parallel ... if(worth_parallel(n))`). At 128K floats nanoGPT's CPU recipe (W1:
// B*T*C = 98K, so a LayerNorm moves 196K-393K floats) runs them on both threads: 3-5% faster a step
// with the default wait policy, the same with PASSIVE (docs/benchmarks.md); at 512K they ran on
// one thread while the other spun. The kernels using it compute each output element the same way on
// any number of threads (reductions keep their per-thread partition, see layernorm.cpp), so the
// choice never changes a result.
#pragma once

#include <cstdint>

namespace nanogpt::cpu {

// Floats read + written below which a single pass runs on the calling thread.
inline constexpr int64_t kMinParallelFloats = int64_t{1} << 17;  // 512 KB

inline bool worth_parallel(int64_t floats_moved) { return floats_moved >= kMinParallelFloats; }

}  // namespace nanogpt::cpu
