// The vector loops beside oneDNN's matmuls (internal to kernels/cpu; matmul_loops.cpp, compiled
// for every CPU target and dispatched at run time): the one-row product of decoding and the bias
// gradient's column sums.
#pragma once

#include <cstdint>

#include "kernels/dtype.h"

namespace nanogpt::cpu {

// out (OC) = W (OC,C) . x (C) + b (OC, nullable). One row per dot product: a single sequential
// stream per thread reads W from DRAM fastest here (33 GB/s on 2 threads vs 24 GB/s for groups of
// 4 rows sharing the loads of x). Each out[o] is summed by one thread in a fixed order, so results
// are bit-identical for any thread count.
void gemv_forward(float* out, const float* x, const float* w, const float* b, int C, int OC);

// dbias (OC) += column sums of dout (N,OC) of any dtype: each thread sums a slice of columns, each
// column in row order from zero, then added (small rows on the calling thread: parallel.h).
void column_sums_add(float* dbias, ConstTypedPtr dout, int64_t N, int OC);

}  // namespace nanogpt::cpu
