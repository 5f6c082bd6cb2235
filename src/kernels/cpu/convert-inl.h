// Serial span conversions between float and the 16-bit storage types, per CPU target: the element
// code of convert.cpp's dispatched widen / narrow and of the dispatched kernels that widen a block
// to float, compute and narrow the result (they include this inside their own per-target code).
// bf16: bit arithmetic in Highway vectors (round to nearest even; a nan stays a quiet nan). fp16:
// Highway's conversions where the target has them in hardware (F16C / AVX-512 / NEON / SVE), else
// core/float16.h's scalar forms;
// results equal core/float16.h's scalar definitions bit for bit (ConvertTest, every target).
#if defined(NANOGPT_KERNELS_CPU_CONVERT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NANOGPT_KERNELS_CPU_CONVERT_INL_H_
#undef NANOGPT_KERNELS_CPU_CONVERT_INL_H_
#else
#define NANOGPT_KERNELS_CPU_CONVERT_INL_H_
#endif

#include <hwy/highway.h>

#include <cstdint>
#include <cstring>

#include "core/float16.h"
#include "kernels/cpu/convert.h"
#include "kernels/dtype.h"

HWY_BEFORE_NAMESPACE();
namespace nanogpt::cpu::HWY_NAMESPACE {
namespace convert_v {
namespace hn = hwy::HWY_NAMESPACE;

// dst (n) = float(bf16 bits src): the bits shifted into the high half.
HWY_INLINE void Bf16ToF32(float* HWY_RESTRICT dst, const uint16_t* HWY_RESTRICT src, int64_t n) {
  const hn::ScalableTag<uint32_t> du32;
  const hn::Rebind<uint16_t, decltype(du32)> du16;
  const hn::RebindToFloat<decltype(du32)> df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(du32));
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    const auto wide = hn::ShiftLeft<16>(hn::PromoteTo(du32, hn::LoadU(du16, src + i)));
    hn::StoreU(hn::BitCast(df, wide), df, dst + i);
  }
  for (; i < n; ++i) dst[i] = bf16_bits_to_float(src[i]);
}

// dst (n) = bf16 bits of src, rounded to nearest even (float_to_bf16_bits, lane by lane).
HWY_INLINE void F32ToBf16(uint16_t* HWY_RESTRICT dst, const float* HWY_RESTRICT src, int64_t n) {
  const hn::ScalableTag<int32_t> di32;
  const hn::Rebind<uint16_t, decltype(di32)> du16;
  const hn::RebindToFloat<decltype(di32)> df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(di32));
  const auto round_bias = hn::Set(di32, 0x7FFF), one = hn::Set(di32, 1);
  const auto abs_mask = hn::Set(di32, 0x7FFFFFFF), inf_bits = hn::Set(di32, 0x7F800000);
  const auto quiet = hn::Set(di32, 0x40);
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    const auto b = hn::BitCast(di32, hn::LoadU(df, src + i));
    // Logical shifts of the bits as 32-bit lanes: (b >> 16) without the sign spreading.
    const auto hi = hn::ShiftRight<16>(hn::BitCast(hn::RebindToUnsigned<decltype(di32)>(), b));
    const auto hi_i = hn::BitCast(di32, hi);
    const auto sum = hn::BitCast(hn::RebindToUnsigned<decltype(di32)>(),
                                 hn::Add(hn::Add(b, round_bias), hn::And(hi_i, one)));
    const auto rounded = hn::BitCast(di32, hn::ShiftRight<16>(sum));
    const auto is_nan = hn::Gt(hn::And(b, abs_mask), inf_bits);
    const auto bits = hn::IfThenElse(is_nan, hn::Or(hi_i, quiet), rounded);  // 0 .. 0xFFFF
    hn::StoreU(hn::DemoteTo(du16, bits), du16, dst + i);
  }
  for (; i < n; ++i) dst[i] = float_to_bf16_bits(src[i]);
}

// Whether this target converts fp16 in hardware (x86: F16C from AVX2 up; ARM64: NEON and SVE).
// Highway's emulation on the others differs from IEEE rounding (it loses -0, for one), so they
// use core/float16.h's scalar forms.
#if (HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2) || \
    (HWY_ARCH_ARM_A64 && HWY_TARGET != HWY_EMU128 && HWY_TARGET != HWY_SCALAR)
constexpr bool kHardwareF16 = true;
#else
constexpr bool kHardwareF16 = false;
#endif

// dst (n) = float(fp16 bits src).
HWY_INLINE void F16ToF32(float* HWY_RESTRICT dst, const uint16_t* HWY_RESTRICT src, int64_t n) {
  const hn::ScalableTag<float> df;
  const hn::Rebind<hwy::float16_t, decltype(df)> dh;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  int64_t i = 0;
  for (; kHardwareF16 && i + N <= n; i += N) {
    hn::StoreU(hn::PromoteTo(df, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(src + i))),
               df, dst + i);
  }
  for (; i < n; ++i) dst[i] = fp16_to_float(src[i]);
}

// dst (n) = fp16 bits of src, rounded to nearest even (float_to_fp16).
HWY_INLINE void F32ToF16(uint16_t* HWY_RESTRICT dst, const float* HWY_RESTRICT src, int64_t n) {
  const hn::ScalableTag<float> df;
  const hn::Rebind<hwy::float16_t, decltype(df)> dh;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  int64_t i = 0;
  for (; kHardwareF16 && i + N <= n; i += N) {
    hn::StoreU(hn::DemoteTo(dh, hn::LoadU(df, src + i)), dh,
               reinterpret_cast<hwy::float16_t*>(dst + i));
  }
  for (; i < n; ++i) dst[i] = float_to_fp16(src[i]);
}

}  // namespace convert_v

// dst (n) = float(src). Serial.
HWY_INLINE void WidenSpan(float* dst, ConstTypedPtr src, int64_t n) {
  switch (src.dtype) {
    case DType::kF32:
      if (dst != src.data) std::memcpy(dst, src.data, static_cast<size_t>(n) * sizeof(float));
      return;
    case DType::kBF16:
      return convert_v::Bf16ToF32(dst, static_cast<const uint16_t*>(src.data), n);
    case DType::kF16:
      return convert_v::F16ToF32(dst, static_cast<const uint16_t*>(src.data), n);
  }
}

// dst (n) = round(src) to dst's dtype. Serial.
HWY_INLINE void NarrowSpan(TypedPtr dst, const float* src, int64_t n) {
  switch (dst.dtype) {
    case DType::kF32:
      if (dst.data != src) std::memcpy(dst.data, src, static_cast<size_t>(n) * sizeof(float));
      return;
    case DType::kBF16:
      return convert_v::F32ToBf16(static_cast<uint16_t*>(dst.data), src, n);
    case DType::kF16:
      return convert_v::F32ToF16(static_cast<uint16_t*>(dst.data), src, n);
  }
}

}  // namespace nanogpt::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
