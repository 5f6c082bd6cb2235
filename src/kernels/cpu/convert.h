// Serial block conversions between float and the 16-bit storage types (internal to kernels/cpu):
// the building blocks of cpu::convert and of every low-precision kernel that widens a block to
// float, computes in float and narrows the result. Dispatched at run time (convert.cpp; the
// per-target element code is convert-inl.h's, which dispatched kernels call directly); results
// equal core/float16.h's scalar conversions bit for bit.
#pragma once

#include <bit>
#include <cstdint>

#include "kernels/dtype.h"

namespace nanogpt::cpu {

// dst (n) = float(src).
void widen(float* dst, ConstTypedPtr src, int64_t n);
// dst (n) = round(src) to dst's dtype.
void narrow(TypedPtr dst, const float* src, int64_t n);
// dst (n) = round(float(dst) + src).
void narrow_add(TypedPtr dst, const float* src, int64_t n);

// One bf16 (bits) as float, and one float rounded to bf16 bits (nearest even; a nan keeps its
// sign and top payload bits and is made quiet): branch-free, so loops of them vectorize; the
// element code of widen / narrow for bf16 and of the kernels that convert in registers.
inline float bf16_bits_to_float(uint16_t h) {
  return std::bit_cast<float>(static_cast<uint32_t>(h) << 16);
}
inline uint16_t float_to_bf16_bits(float f) {
  const uint32_t b = std::bit_cast<uint32_t>(f);
  const uint32_t rounded = (b + 0x7FFFu + ((b >> 16) & 1)) >> 16;
  const uint32_t quiet_nan = (b >> 16) | 0x40;
  return static_cast<uint16_t>((b & 0x7FFFFFFFu) > 0x7F800000u ? quiet_nan : rounded);
}

// Elements per block of the blocked low-precision kernels (fits two blocks in L1 per thread).
inline constexpr int64_t kConvertBlock = 2048;

}  // namespace nanogpt::cpu

namespace nanogpt::cpu {
// dst (n) = round(float(dst) + src), in parallel over blocks.
void convert_add(TypedPtr dst, const float* src, int64_t n);
}  // namespace nanogpt::cpu
