// Serial block conversions between float and the 16-bit storage types (internal to kernels/cpu):
// the building blocks of cpu::convert and of every low-precision kernel that widens a block to
// float, computes in float and narrows the result. Vectorized (AVX-512 / F16C for fp16, bit
// arithmetic for bf16); results equal core/float16.h's scalar conversions bit for bit.
#pragma once

#include <cstdint>

#include "kernels/dtype.h"

namespace nanogpt::cpu {

// dst (n) = float(src).
void widen(float* dst, ConstTypedPtr src, int64_t n);
// dst (n) = round(src) to dst's dtype.
void narrow(TypedPtr dst, const float* src, int64_t n);
// dst (n) = round(float(dst) + src).
void narrow_add(TypedPtr dst, const float* src, int64_t n);

// Elements per block of the blocked low-precision kernels (fits two blocks in L1 per thread).
inline constexpr int64_t kConvertBlock = 2048;

}  // namespace nanogpt::cpu

namespace nanogpt::cpu {
// dst (n) = round(float(dst) + src), in parallel over blocks.
void convert_add(TypedPtr dst, const float* src, int64_t n);
}  // namespace nanogpt::cpu
