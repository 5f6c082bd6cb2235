// Conversions between float and bf16 / fp16: the serial block forms (convert.h) and the parallel
// cpu::convert op, compiled for every CPU target (Highway's foreach_target.h; the element code is
// convert-inl.h's) and dispatched at run time.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/convert.cpp"
#include "kernels/cpu/convert.h"

#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cstring>

#include "core/check.h"
#include "core/parallel_for.h"
#include "kernels/cpu/convert-inl.h"
#include "kernels/cpu/parallel.h"
#include "kernels/ops_lowp.h"

HWY_BEFORE_NAMESPACE();
namespace nanogpt::cpu::HWY_NAMESPACE {

void Widen(float* dst, ConstTypedPtr src, int64_t n) { WidenSpan(dst, src, n); }

void Narrow(TypedPtr dst, const float* src, int64_t n) { NarrowSpan(dst, src, n); }

void NarrowAdd(TypedPtr dst, const float* src, int64_t n) {
  if (float* d = dst.f32()) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) d[i] += src[i];
    return;
  }
  alignas(64) float tmp[kConvertBlock];
  for (int64_t i0 = 0; i0 < n; i0 += kConvertBlock) {
    const int64_t m = std::min(kConvertBlock, n - i0);
    WidenSpan(tmp, dst.at(i0), m);
#pragma omp simd
    for (int64_t i = 0; i < m; ++i) tmp[i] += src[i0 + i];
    NarrowSpan(dst.at(i0), tmp, m);
  }
}

void Convert(TypedPtr dst, ConstTypedPtr src, int64_t n) {
  CHECK(n >= 0, "convert: n = {} must be >= 0", n);
  const int64_t blocks = (n + kConvertBlock - 1) / kConvertBlock;
  parallel_ranges(blocks, worth_parallel(n), [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k) {
      const int64_t i0 = k * kConvertBlock, m = std::min(kConvertBlock, n - i0);
      if (src.dtype == DType::kF32) {
        NarrowSpan(dst.at(i0), static_cast<const float*>(src.data) + i0, m);
      } else if (dst.dtype == DType::kF32) {
        WidenSpan(static_cast<float*>(dst.data) + i0, src.at(i0), m);
      } else {
        alignas(64) float tmp[kConvertBlock];
        WidenSpan(tmp, src.at(i0), m);
        NarrowSpan(dst.at(i0), tmp, m);
      }
    }
  });
}

void ConvertAdd(TypedPtr dst, const float* src, int64_t n) {
  const int64_t blocks = (n + kConvertBlock - 1) / kConvertBlock;
  parallel_ranges(blocks, worth_parallel(n), [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k) {
      const int64_t i0 = k * kConvertBlock;
      NarrowAdd(dst.at(i0), src + i0, std::min(kConvertBlock, n - i0));
    }
  });
}

}  // namespace nanogpt::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nanogpt::cpu {

HWY_EXPORT(Widen);
HWY_EXPORT(Narrow);
HWY_EXPORT(NarrowAdd);
HWY_EXPORT(Convert);
HWY_EXPORT(ConvertAdd);

void widen(float* dst, ConstTypedPtr src, int64_t n) { HWY_DYNAMIC_DISPATCH(Widen)(dst, src, n); }

void narrow(TypedPtr dst, const float* src, int64_t n) {
  HWY_DYNAMIC_DISPATCH(Narrow)(dst, src, n);
}

void narrow_add(TypedPtr dst, const float* src, int64_t n) {
  HWY_DYNAMIC_DISPATCH(NarrowAdd)(dst, src, n);
}

void convert(TypedPtr dst, ConstTypedPtr src, int64_t n) {
  HWY_DYNAMIC_DISPATCH(Convert)(dst, src, n);
}

void convert_add(TypedPtr dst, const float* src, int64_t n) {
  HWY_DYNAMIC_DISPATCH(ConvertAdd)(dst, src, n);
}

void fill_zero(TypedPtr dst, int64_t n) {
  const size_t bytes = static_cast<size_t>(n) * dtype_size(dst.dtype);
  constexpr size_t kChunk = size_t{1} << 20;  // bytes per parallel piece
  const int64_t chunks = static_cast<int64_t>((bytes + kChunk - 1) / kChunk);
  auto* base = static_cast<std::byte*>(dst.data);
  parallel_ranges(chunks, worth_parallel(n), [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k) {
      const size_t b0 = static_cast<size_t>(k) * kChunk;
      std::memset(base + b0, 0, std::min(kChunk, bytes - b0));
    }
  });
}

}  // namespace nanogpt::cpu
#endif  // HWY_ONCE
