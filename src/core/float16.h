// Scalar conversions between float and the 16-bit float formats (bf16: 8 significant bits; IEEE
// fp16: 11), both directions rounding to nearest even. The definitions the fast conversion kernels
// (kernels/cpu/convert.cpp) are tested against; also used to read bf16/fp16 model files.
#pragma once

#include <cstdint>
#include <cstring>

namespace nanogpt {

inline float bf16_to_float(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline float fp16_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1F, mant = h & 0x3FF, bits;
  if (exp == 0x1F) {
    bits = sign | 0x7F800000u | (mant << 13);  // inf / nan
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);  // normal: rebias 15 -> 127
  } else if (mant == 0) {
    bits = sign;  // zero
  } else {        // subnormal: normalize
    int e = -1;
    do {
      ++e;
      mant <<= 1;
    } while ((mant & 0x400) == 0);
    bits = sign | (static_cast<uint32_t>(112 - e) << 23) | ((mant & 0x3FF) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Round-to-nearest-even float -> bf16 (nan stays nan).
inline uint16_t float_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);
  bits += 0x7FFFu + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}

// Round-to-nearest-even float -> IEEE fp16: overflow (>= 65520) -> inf, values below 2^-14 ->
// subnormals (multiples of 2^-24) or 0, nan stays a quiet nan.
inline uint16_t float_to_fp16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t ax = x & 0x7FFFFFFFu;
  if (ax > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00 | ((ax >> 13) & 0x3FF));
  if (ax >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00);  // 65520 and up: inf
  if (ax >= 0x38800000u) {                // normal fp16: rebias the exponent 127 -> 15, round
    uint32_t r = ax - 0x38000000u;        // the 13 dropped bits to nearest even (carries into
    r += 0xFFFu + ((r >> 13) & 1);        // the exponent are right)
    return static_cast<uint16_t>(sign | (r >> 13));
  }
  // Subnormal or zero: adding 0.5 (whose ulp is 2^-24, the fp16 subnormal step) rounds |f| to a
  // multiple of 2^-24 in the FPU's round-to-nearest-even; the low bits are then the fp16 pattern.
  float a;
  std::memcpy(&a, &ax, 4);
  a += 0.5f;
  uint32_t b;
  std::memcpy(&b, &a, 4);
  return static_cast<uint16_t>(sign | (b - 0x3F000000u));
}

// Unit roundoff u = 2^-p of a format with p significant bits (bf16 8, fp16 11, float 24): the
// relative error of one rounding to nearest is at most u (for values in the normal range).
inline constexpr double kUnitRoundoffBf16 = 1.0 / 256;    // 2^-8
inline constexpr double kUnitRoundoffFp16 = 1.0 / 2048;   // 2^-11
inline constexpr double kUnitRoundoffF32 = 1.0 / 16777216;  // 2^-24

}  // namespace nanogpt
