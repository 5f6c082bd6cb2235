// Instruction-set extensions as bits: the ones this build's compiler may emit (kCompiledIsa, from
// the compiler's macros in the including file), the ones this CPU offers (cpu_isa(), compiled for
// baseline x86-64 in isa_check.cpp so it runs anywhere) and their names.
#pragma once

#include <cstddef>
#include <string>

namespace nanogpt {

enum IsaBit : unsigned {
  kIsaAvx2 = 1u << 0,
  kIsaFma = 1u << 1,
  kIsaF16c = 1u << 2,
  kIsaBmi2 = 1u << 3,
  kIsaAvx512f = 1u << 4,
  kIsaAvx512bw = 1u << 5,
  kIsaAvx512vl = 1u << 6,
  kIsaAvx512dq = 1u << 7,
  kIsaAvx512cd = 1u << 8,
  kIsaAvx512bf16 = 1u << 9,
  kIsaAvx512vnni = 1u << 10,
  kIsaAvx512vbmi = 1u << 11,
  kIsaAvx512vbmi2 = 1u << 12,
  kIsaAvx512bitalg = 1u << 13,
  kIsaAvx512vpopcntdq = 1u << 14,
  kIsaAvx512ifma = 1u << 15,
  kIsaGfni = 1u << 16,
  kIsaVaes = 1u << 17,
  kIsaVpclmulqdq = 1u << 18,
  kIsaAvxvnni = 1u << 19,
};

constexpr unsigned compiled_isa_of_this_file() {
  unsigned m = 0;
#ifdef __AVX2__
  m |= kIsaAvx2;
#endif
#ifdef __FMA__
  m |= kIsaFma;
#endif
#ifdef __F16C__
  m |= kIsaF16c;
#endif
#ifdef __BMI2__
  m |= kIsaBmi2;
#endif
#ifdef __AVX512F__
  m |= kIsaAvx512f;
#endif
#ifdef __AVX512BW__
  m |= kIsaAvx512bw;
#endif
#ifdef __AVX512VL__
  m |= kIsaAvx512vl;
#endif
#ifdef __AVX512DQ__
  m |= kIsaAvx512dq;
#endif
#ifdef __AVX512CD__
  m |= kIsaAvx512cd;
#endif
#ifdef __AVX512BF16__
  m |= kIsaAvx512bf16;
#endif
#ifdef __AVX512VNNI__
  m |= kIsaAvx512vnni;
#endif
#ifdef __AVX512VBMI__
  m |= kIsaAvx512vbmi;
#endif
#ifdef __AVX512VBMI2__
  m |= kIsaAvx512vbmi2;
#endif
#ifdef __AVX512BITALG__
  m |= kIsaAvx512bitalg;
#endif
#ifdef __AVX512VPOPCNTDQ__
  m |= kIsaAvx512vpopcntdq;
#endif
#ifdef __AVX512IFMA__
  m |= kIsaAvx512ifma;
#endif
#ifdef __GFNI__
  m |= kIsaGfni;
#endif
#ifdef __VAES__
  m |= kIsaVaes;
#endif
#ifdef __VPCLMULQDQ__
  m |= kIsaVpclmulqdq;
#endif
#ifdef __AVXVNNI__
  m |= kIsaAvxvnni;
#endif
  return m;
}

// What the library code was compiled for (build_info.cpp is compiled with the build's -march).
extern "C" const unsigned nanogpt_compiled_isa;

// The extensions this CPU (and the OS, for AVX-512 state) supports. Baseline code: safe to call
// before anything else has run on a CPU that lacks the compiled-for extensions.
extern "C" unsigned nanogpt_cpu_isa();
// Writes the names of the bits of mask, space-separated ("avx2 fma avx512f"), into buf (n bytes,
// always NUL-terminated). Baseline code, no allocation.
extern "C" void nanogpt_isa_names(unsigned mask, char* buf, size_t n);

inline std::string isa_names(unsigned mask) {
  char buf[512];
  nanogpt_isa_names(mask, buf, sizeof buf);
  return buf;
}

}  // namespace nanogpt
