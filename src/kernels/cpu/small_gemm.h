// The float32 fully connected layer on small shapes (nanoGPT's CPU recipe: 768 rows x 128..512),
// where oneDNN's per-call overhead and its split over two threads cost more than the products:
// register tiles of tile_gemm-inl.h over cache-sized panels, one OpenMP region per product, each
// output element summed in a fixed order (bit-identical for any thread count).
// Internal to kernels/cpu; matmul.cpp routes the shapes small_gemm_fits accepts here.
#pragma once

#include <cstdint>

#include "kernels/ops.h"

namespace nanogpt::cpu {

// Whether (N, C) x (C, OC) runs here: C and OC multiples of 16 (the tiles' vector width) and at
// most kSmallGemmMaxMacs multiply-adds (larger products stay with oneDNN, which blocks for L2/L3
// and is as fast there).
inline constexpr int64_t kSmallGemmMaxMacs = int64_t{1} << 26;
bool small_gemm_fits(int64_t N, int C, int OC);
// Whether this context runs a float32 product of this shape here: it fits and the run's small
// products way (kernels/kernel_ways.h) is the tiles, not oneDNN.
bool small_gemm_runs(const CpuBackend& ctx, int64_t N, int C, int OC);

// out (N,OC) = inp (N,C) . weight (OC,C)^T + bias (OC, nullable).
void small_gemm_forward(float* out, const float* inp, const float* weight, const float* bias,
                        int64_t N, int C, int OC);

// small_gemm_forward, then act (N,OC) = gelu(out) in the same region (the MLP's fc with its GELU,
// ops_lowp.h's matmul_gelu_forward): the values of small_gemm_forward then gelu_forward, bit for
// bit.
void small_gemm_gelu_forward(float* out, float* act, const float* inp, const float* weight,
                             const float* bias, int64_t N, int C, int OC, MlpActivation kind);

// dinp (N,C) += dout (N,OC) . weight (OC,C) (= when !accumulate_dinp), dweight (OC,C) +=
// dout^T . inp (N,C) (the first half of the rows summed onto dweight, the second from zero and
// then added: the same on any number of threads) and dbias (OC) += column sums of dout (each
// column summed in row order from zero, then added: matmul.cpp's order), each pointer nullable,
// in one parallel region.
void small_gemm_backward(float* dinp, bool accumulate_dinp, float* dweight, float* dbias,
                         const float* dout, const float* inp, const float* weight, int64_t N, int C,
                         int OC);

// The backward of out (N,OC) = gelu(pre (N,C)) . weight (OC,C)^T (the MLP's projection, without
// its bias) in one region: dweight (OC,C) += dout^T . gelu(pre) (nullable; gelu recomputed into
// the packed panels, never stored), dbias (OC, nullable) += column sums of dout as in
// small_gemm_backward, and dpre (N,C) = (dout . weight) * gelu'(pre), overwritten; dpre must not
// overlap pre. The values of gelu_forward, small_gemm_backward into d(gelu) (dinp overwritten)
// and gelu_backward_overwrite, bit for bit.
void small_gemm_gelu_backward(float* dpre, float* dweight, float* dbias, const float* dout,
                              const float* pre, const float* weight, int64_t N, int C, int OC,
                              MlpActivation kind);

}  // namespace nanogpt::cpu
