// Cache-friendly matrix transpose: between our (out, in) Linear layout and HF Conv1D's (in, out)
// when model files are written and read (io), and Newton-Schulz's tall matrices in and out of their
// wide orientation (optim; element by element, their column-strided side ran ~2 ms a step of the
// CPU speedrun).
#pragma once

#include <cstdint>

namespace nanogpt {

// out[j * out_stride + i] = in[i * in_stride + j] for i < rows, j < cols (in is rows x cols with
// row stride in_stride; out is cols x rows with row stride out_stride). Works through padded
// 64x64 tiles, since power-of-two strides would make a naive loop alias in the L1 cache.
void transpose_tiled(float* out, int64_t out_stride, const float* in, int64_t in_stride,
                     int64_t rows, int64_t cols);

}  // namespace nanogpt
