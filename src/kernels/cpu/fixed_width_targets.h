// Leaves Arm's scalable-vector targets (SVE, SVE2 and their fixed-length variants) out of the file
// that includes this first, before any Highway header: the file is compiled for NEON (and EMU128)
// on ARM64, and its HWY_DYNAMIC_DISPATCH runs the NEON copy on an SVE CPU (Highway picks the best
// target the file was compiled for). No effect on x86. Two reasons a file does this:
// - it keeps Highway vectors in arrays or structs (the register tiles of tile_gemm-inl.h, the score
//   rows of attention_tiles-inl.h): SVE vectors are "sizeless" types, which C++ cannot put there.
//   The tiles are 128 bits wide anyway (4 x 16 floats in 16 NEON registers).
// - its element code must give the same floats as a copy of it compiled for the build's target
//   (armv8-a: NEON) elsewhere: gelu.cpp, whose GELU the fused MLP (small_gemm.cpp) repeats. GCC
//   contracts a*b+c into FMAs in NEON loops but not in SVE's predicated (masked) ones, so an SVE
//   copy differs in the last bits (SmallGemmTest.GeluFusedMatchesTheUnfusedOpsBitForBit).
#pragma once

#ifdef HWY_DISABLED_TARGETS
#error "kernels/cpu/fixed_width_targets.h must be included before any Highway header, once"
#endif
#define HWY_DISABLED_TARGETS (HWY_SVE | HWY_SVE2 | HWY_SVE_256 | HWY_SVE2_128)
