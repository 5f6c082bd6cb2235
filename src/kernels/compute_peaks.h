// The measured peaks a run is judged against, one per arithmetic unit its ops use: the fp32 FMA
// probe and the bf16 dot-product probe (core/cpu_info.h), and the rate of our own matmul op in the
// run's 16-bit dtype on a large shape (oneDNN's kernel: AMX tiles where the CPU has them, which
// run 3-4x the vdpbf16ps rate). MFU is taken against the unit the run's matmuls use and each
// op class of the profile against its own unit, so neither reads above 100%.
#pragma once

#include <string>

#include "core/cpu_info.h"
#include "kernels/dtype.h"
#include "kernels/op_profile.h"

namespace nanogpt {

struct ComputePeaks {
  DType dtype = DType::kF32;  // the run's
  PeakFlops fp32_fma;         // fp32 FMAs at the dispatched target's width
  PeakFlops bf16_dot;         // vdpbf16ps; 0 where the CPU (or the cap) has none
  PeakFlops lowp_matmul;      // matmul_forward in dtype (16-bit runs only; else 0)

  // The peak of the arithmetic the dtype's products run in outside the matmuls (our attention):
  // bf16 dot products for bfloat16 where there are any, else fp32 FMAs.
  double arithmetic() const;
  // The peak of the unit the matmuls run on: the larger of arithmetic() and the measured matmul
  // (larger where oneDNN uses a faster unit than our kernels: AMX).
  double matmul() const;
  // What matmul() is, for the log: "fp32 FMA", "bf16 dot products" or "bfloat16 matmul (oneDNN)".
  std::string matmul_unit() const;
  bool matmul_from_cache() const;
  // The profile's % of peak of op class c: matmul() for the matmuls and the classifier (and for
  // the optimizer in bf16 runs, whose FLOPs are Muon's bf16 Newton-Schulz products), arithmetic()
  // for attention, the fp32 FMA peak for the rest.
  double for_op_class(OpClass c) const;
};

// Measures the peaks for a run in dtype on `threads` threads (about 0.1 s each; the 16-bit matmul
// probe, 2048 x 768 x 3072 products, a few tenths), keeping the best ever measured here
// (remember_best_peak).
ComputePeaks measure_compute_peaks(DType dtype, int threads, bool use_cache = true);

}  // namespace nanogpt
