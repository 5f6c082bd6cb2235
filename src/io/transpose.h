// Cache-friendly matrix transpose for converting between our (out, in) Linear layout and HF
// Conv1D's (in, out) when writing and reading model files.
#pragma once

#include <cstdint>

namespace nanogpt {

// out[j * out_stride + i] = in[i * in_stride + j] for i < rows, j < cols (in is rows x cols with
// row stride in_stride; out is cols x rows with row stride out_stride). Works through padded
// 64x64 tiles, since power-of-two strides would make a naive loop alias in the L1 cache.
void transpose_tiled(float* out, int64_t out_stride, const float* in, int64_t in_stride,
                     int64_t rows, int64_t cols);

}  // namespace nanogpt
