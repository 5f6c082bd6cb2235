// Owns the two pragmas that add AVX512_BF16 to the functions between them, inside a Highway
// per-target region (between HWY_BEFORE_NAMESPACE and HWY_AFTER_NAMESPACE) of the AVX3_DL copy:
//   NANOGPT_AVX512BF16_BEGIN   ... functions using _mm512_dpbf16_ps ...   NANOGPT_AVX512BF16_END
// GCC adds a nested `target` pragma to the current options. Clang keeps the outermost `clang
// attribute push` of a target, so there the region pops Highway's attribute, pushes this target's
// features plus avx512bf16, and at the end restores Highway's own.
#pragma once

#include <hwy/base.h>

#if defined(__clang__)
#define NANOGPT_AVX512BF16_BEGIN \
  HWY_POP_ATTRIBUTES HWY_PUSH_ATTRIBUTES(HWY_TARGET_STR ",avx512bf16")
#define NANOGPT_AVX512BF16_END HWY_POP_ATTRIBUTES HWY_PUSH_ATTRIBUTES(HWY_TARGET_STR)
#else
#define NANOGPT_AVX512BF16_BEGIN HWY_PRAGMA(GCC push_options) HWY_PRAGMA(GCC target("avx512bf16"))
#define NANOGPT_AVX512BF16_END HWY_PRAGMA(GCC pop_options)
#endif
