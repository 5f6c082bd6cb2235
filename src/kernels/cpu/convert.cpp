// Conversions between float and bf16 / fp16: the serial block forms (convert.h) and the parallel
// cpu::convert op. bf16 uses integer bit arithmetic that the compiler vectorizes; fp16 uses the
// hardware conversions (AVX-512F 16 lanes, else F16C 8 lanes), with the scalar forms of
// core/float16.h for tails and for builds without F16C.
#include "kernels/cpu/convert.h"
#include "kernels/cpu/parallel.h"

#if defined(__AVX512F__) || defined(__F16C__)
#include <immintrin.h>  // x86 only: other architectures take the scalar forms
#endif

#include <algorithm>
#include <cstring>

#include "core/check.h"
#include "core/float16.h"
#include "kernels/ops_lowp.h"

namespace nanogpt::cpu {

namespace {

void bf16_to_f32(float* dst, const uint16_t* src, int64_t n) {
  uint32_t* d = reinterpret_cast<uint32_t*>(dst);
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) d[i] = static_cast<uint32_t>(src[i]) << 16;
}

// Round to nearest even; a nan keeps its sign and top payload bits and is made quiet.
void f32_to_bf16(uint16_t* dst, const float* src, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) dst[i] = float_to_bf16_bits(src[i]);
}

void f16_to_f32(float* dst, const uint16_t* src, int64_t n) {
  int64_t i = 0;
#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(h));
  }
#elif defined(__F16C__)
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
#endif
  for (; i < n; ++i) dst[i] = fp16_to_float(src[i]);
}

void f32_to_f16(uint16_t* dst, const float* src, int64_t n) {
  int64_t i = 0;
#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16) {
    const __m256i h = _mm512_cvtps_ph(_mm512_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), h);
  }
#elif defined(__F16C__)
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
  }
#endif
  for (; i < n; ++i) dst[i] = float_to_fp16(src[i]);
}

}  // namespace

void widen(float* dst, ConstTypedPtr src, int64_t n) {
  switch (src.dtype) {
    case DType::kF32:
      if (dst != src.data) std::memcpy(dst, src.data, static_cast<size_t>(n) * sizeof(float));
      return;
    case DType::kBF16: return bf16_to_f32(dst, static_cast<const uint16_t*>(src.data), n);
    case DType::kF16: return f16_to_f32(dst, static_cast<const uint16_t*>(src.data), n);
  }
}

void narrow(TypedPtr dst, const float* src, int64_t n) {
  switch (dst.dtype) {
    case DType::kF32:
      if (dst.data != src) std::memcpy(dst.data, src, static_cast<size_t>(n) * sizeof(float));
      return;
    case DType::kBF16: return f32_to_bf16(static_cast<uint16_t*>(dst.data), src, n);
    case DType::kF16: return f32_to_f16(static_cast<uint16_t*>(dst.data), src, n);
  }
}

void narrow_add(TypedPtr dst, const float* src, int64_t n) {
  if (float* d = dst.f32()) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) d[i] += src[i];
    return;
  }
  alignas(64) float tmp[kConvertBlock];
  for (int64_t i0 = 0; i0 < n; i0 += kConvertBlock) {
    const int64_t m = std::min(kConvertBlock, n - i0);
    widen(tmp, dst.at(i0), m);
#pragma omp simd
    for (int64_t i = 0; i < m; ++i) tmp[i] += src[i0 + i];
    narrow(dst.at(i0), tmp, m);
  }
}

void convert(TypedPtr dst, ConstTypedPtr src, int64_t n) {
  CHECK(n >= 0, "convert: n = {} must be >= 0", n);
  const int64_t blocks = (n + kConvertBlock - 1) / kConvertBlock;
#pragma omp parallel for schedule(static) if (worth_parallel(n))
  for (int64_t k = 0; k < blocks; ++k) {
    const int64_t i0 = k * kConvertBlock, m = std::min(kConvertBlock, n - i0);
    if (src.dtype == DType::kF32) {
      narrow(dst.at(i0), static_cast<const float*>(src.data) + i0, m);
    } else if (dst.dtype == DType::kF32) {
      widen(static_cast<float*>(dst.data) + i0, src.at(i0), m);
    } else {
      alignas(64) float tmp[kConvertBlock];
      widen(tmp, src.at(i0), m);
      narrow(dst.at(i0), tmp, m);
    }
  }
}

}  // namespace nanogpt::cpu

namespace nanogpt::cpu {

void convert_add(TypedPtr dst, const float* src, int64_t n) {
  const int64_t blocks = (n + kConvertBlock - 1) / kConvertBlock;
#pragma omp parallel for schedule(static) if (worth_parallel(n))
  for (int64_t k = 0; k < blocks; ++k) {
    const int64_t i0 = k * kConvertBlock;
    narrow_add(dst.at(i0), src + i0, std::min(kConvertBlock, n - i0));
  }
}

}  // namespace nanogpt::cpu

namespace nanogpt::cpu {

void fill_zero(TypedPtr dst, int64_t n) {
  const size_t bytes = static_cast<size_t>(n) * dtype_size(dst.dtype);
  constexpr size_t kChunk = size_t{1} << 20;  // bytes per parallel piece
  const int64_t chunks = static_cast<int64_t>((bytes + kChunk - 1) / kChunk);
  auto* base = static_cast<std::byte*>(dst.data);
#pragma omp parallel for schedule(static) if (worth_parallel(n))
  for (int64_t k = 0; k < chunks; ++k) {
    const size_t b0 = static_cast<size_t>(k) * kChunk;
    std::memset(base + b0, 0, std::min(kChunk, bytes - b0));
  }
}

}  // namespace nanogpt::cpu
