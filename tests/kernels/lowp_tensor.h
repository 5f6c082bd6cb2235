// Test helpers for the 16-bit kernels: a tensor stored in float32, bfloat16 or float16 (rounded
// with core/float16.h's scalar definitions) with its widened values, and the smallest magnitude
// that counts in a dtype, and its unit roundoff. Shared by lowp_test.cpp and mlp_fused_test.cpp.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/float16.h"
#include "kernels/dtype.h"

namespace nanogpt::testing {

// Half the subnormal step of t: a value below the normal range.
inline double tiny(DType t) {
  return std::ldexp(1.0, t == DType::kF16 ? -25 : (t == DType::kBF16 ? -134 : -150));
}

// Unit roundoff of t (bf16 2^-8, fp16 2^-11, float 2^-24).
inline double unit_roundoff(DType t) {
  return t == DType::kBF16 ? kUnitRoundoffBf16
                           : (t == DType::kF16 ? kUnitRoundoffFp16 : kUnitRoundoffF32);
}

// A tensor stored in `t` (values rounded with the scalar definitions) and its exact float values.
struct Lowp {
  DType t;
  std::vector<uint16_t> bits;
  std::vector<float> f32;  // the storage when t is float32, else the widened values
  Lowp(const std::vector<float>& v, DType type) : t(type), bits(v.size()), f32(v) {
    if (t == DType::kF32) return;
    for (size_t i = 0; i < v.size(); ++i) {
      bits[i] = t == DType::kBF16 ? float_to_bf16(v[i]) : float_to_fp16(v[i]);
      f32[i] = t == DType::kBF16 ? bf16_to_float(bits[i]) : fp16_to_float(bits[i]);
    }
  }
  Lowp(size_t n, DType type) : Lowp(std::vector<float>(n, 0.0f), type) {}
  TypedPtr ptr() { return t == DType::kF32 ? TypedPtr(f32.data()) : TypedPtr(bits.data(), t); }
  // The current values as floats (after an op wrote into ptr()).
  std::vector<float> values() const {
    if (t == DType::kF32) return f32;
    std::vector<float> v(bits.size());
    for (size_t i = 0; i < v.size(); ++i) {
      v[i] = t == DType::kBF16 ? bf16_to_float(bits[i]) : fp16_to_float(bits[i]);
    }
    return v;
  }
  bool operator==(const Lowp& o) const {  // the stored values, bit for bit
    return t == o.t && (t == DType::kF32 ? f32 == o.f32 : bits == o.bits);
  }
};

}  // namespace nanogpt::testing
