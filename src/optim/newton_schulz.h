// Newton-Schulz orthogonalization, the core of Muon (Keller Jordan's published quintic): an
// approximation of U V^T for M = U S V^T, computed with matmuls only. The fast version runs its
// matmuls and element passes through a Backend (on its memory) (float32, or bfloat16 inputs with float32 results as the model's
// 16-bit matmuls); a plain double-precision loop version is the reference the tests compare to.
#pragma once

#include <cstdint>

#include "core/buffer.h"
#include "core/memory.h"
#include "kernels/backend.h"
#include "kernels/dtype.h"

namespace nanogpt {

// The published quintic X <- a X + (b A + c A A) X with A = X X^T: it pushes every singular value
// of a matrix with spectral norm <= 1 into about [0.7, 1.2] within five steps (fast, not exact).
struct NewtonSchulzCoefficients {
  double a = 3.4445, b = -4.7750, c = 2.0315;
};
inline constexpr NewtonSchulzCoefficients kMuonQuintic{};

// The definition, in double with plain loops: X = M / (||M||_F + 1e-7), as (cols, rows) = M^T when
// rows > cols (so that A = X X^T is the smaller Gram matrix); `steps` iterations of the quintic;
// out = X transposed back. out, m: (rows, cols), row-major.
void newton_schulz_reference(double* out, const double* m, int64_t rows, int64_t cols, int steps);

// Matmul FLOPs of `steps` iterations on a (rows, cols) matrix: per iteration on X (r, c), r <= c,
// 2 r^2 c (X X^T) + 2 r^3 (A A) + 2 r^2 c (B X).
double newton_schulz_flops(int64_t rows, int64_t cols, int64_t steps);

// The fast version, with its workspaces for matrices of up to max_numel elements whose smaller
// side is at most max_small. Not thread-safe (one per optimizer); the kernels use all threads.
class NewtonSchulz {
 public:
  // dtype kBF16: the matmul inputs are rounded to bfloat16 (results, and everything between the
  // matmuls, stay float32); any other dtype: float32 throughout. The workspaces are in
  // backend's memory, as out and m must be; backend must outlive this object.
  NewtonSchulz(Backend& backend, DType dtype, int64_t max_numel, int64_t max_small,
               MemoryTracker* tracker = nullptr);

  // out (rows, cols) = newton_schulz_reference's result for m (rows, cols), in float32 (out and m
  // must not overlap). rows * cols <= max_numel and min(rows, cols) <= max_small.
  void orthogonalize(float* out, const float* m, int64_t rows, int64_t cols, int steps);

  DType dtype() const { return dtype_; }

 private:
  // The bfloat16 copy of src (n floats) in dst, or src itself in float32.
  ConstTypedPtr matmul_input(Buffer<uint16_t>& dst, const float* src, int64_t n);

  Backend& backend_;
  DType dtype_;
  int64_t max_numel_, max_small_;
  Buffer<float> x_;           // (r, c) the iterate, r = min(rows, cols), c = max(rows, cols)
  Buffer<float> bx_;          // (r, c) B X
  Buffer<float> a_, aa_, b_;  // (r, r) A = X X^T, A A, B = b A + c A A
  Buffer<uint16_t> x_lowp_, a_lowp_, b_lowp_;  // bfloat16 copies of X, A, B; empty in float32
};

}  // namespace nanogpt
