// Newton-Schulz orthogonalization: the double reference and the version on a Backend.
#include "optim/newton_schulz.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/check.h"

namespace nanogpt {

namespace {

constexpr double kNormEps = 1e-7;  // X = M / (||M||_F + eps), as published

}  // namespace

void newton_schulz_reference(double* out, const double* m, int64_t rows, int64_t cols, int steps) {
  const bool tr = rows > cols;
  const int64_t r = tr ? cols : rows, c = tr ? rows : cols;
  double sum_sq = 0;
  for (int64_t i = 0; i < rows * cols; ++i) sum_sq += m[i] * m[i];
  const double inv = 1.0 / (std::sqrt(sum_sq) + kNormEps);
  std::vector<double> x(static_cast<size_t>(r * c)), a(static_cast<size_t>(r * r)),
      aa(static_cast<size_t>(r * r)), bx(static_cast<size_t>(r * c));
  for (int64_t i = 0; i < r; ++i) {
    for (int64_t j = 0; j < c; ++j) x[i * c + j] = (tr ? m[j * cols + i] : m[i * cols + j]) * inv;
  }
  const NewtonSchulzCoefficients k = kMuonQuintic;
  for (int s = 0; s < steps; ++s) {
    for (int64_t i = 0; i < r; ++i) {  // A (r, r) = X X^T
      for (int64_t j = 0; j < r; ++j) {
        double acc = 0;
        for (int64_t t = 0; t < c; ++t) acc += x[i * c + t] * x[j * c + t];
        a[i * r + j] = acc;
      }
    }
    for (int64_t i = 0; i < r; ++i) {  // B (r, r) = b A + c A A, kept in aa
      for (int64_t j = 0; j < r; ++j) {
        double acc = 0;
        for (int64_t t = 0; t < r; ++t) acc += a[i * r + t] * a[t * r + j];
        aa[i * r + j] = k.b * a[i * r + j] + k.c * acc;
      }
    }
    for (int64_t i = 0; i < r; ++i) {  // B X (r, c)
      for (int64_t j = 0; j < c; ++j) {
        double acc = 0;
        for (int64_t t = 0; t < r; ++t) acc += aa[i * r + t] * x[t * c + j];
        bx[i * c + j] = acc;
      }
    }
    for (int64_t i = 0; i < r * c; ++i) x[i] = k.a * x[i] + bx[i];
  }
  for (int64_t i = 0; i < r; ++i) {
    for (int64_t j = 0; j < c; ++j) (tr ? out[j * cols + i] : out[i * cols + j]) = x[i * c + j];
  }
}

double newton_schulz_flops(int64_t rows, int64_t cols, int64_t steps) {
  const double r = static_cast<double>(std::min(rows, cols));
  const double c = static_cast<double>(std::max(rows, cols));
  return static_cast<double>(steps) * (4 * r * r * c + 2 * r * r * r);
}

NewtonSchulz::NewtonSchulz(Backend& backend, DType dtype, int64_t max_numel, int64_t max_small,
                           MemoryTracker* tracker)
    : backend_(backend),
      dtype_(dtype == DType::kBF16 ? DType::kBF16 : DType::kF32),
      max_numel_(max_numel),
      max_small_(max_small),
      x_(static_cast<size_t>(max_numel), tracker, &backend),
      bx_(static_cast<size_t>(max_numel), tracker, &backend),
      a_(static_cast<size_t>(max_small * max_small), tracker, &backend),
      aa_(static_cast<size_t>(max_small * max_small), tracker, &backend),
      b_(static_cast<size_t>(max_small * max_small), tracker, &backend) {
  if (dtype_ == DType::kBF16) {
    x_lowp_ = Buffer<uint16_t>(static_cast<size_t>(max_numel), tracker, &backend);
    a_lowp_ = Buffer<uint16_t>(static_cast<size_t>(max_small * max_small), tracker, &backend);
    b_lowp_ = Buffer<uint16_t>(static_cast<size_t>(max_small * max_small), tracker, &backend);
  }
}

ConstTypedPtr NewtonSchulz::matmul_input(Buffer<uint16_t>& dst, const float* src, int64_t n) {
  if (dtype_ == DType::kF32) return src;
  TypedPtr lowp(dst.data(), dtype_);
  backend_.convert(lowp, src, n);
  return lowp;
}

void NewtonSchulz::orthogonalize(float* out, const float* m, int64_t rows, int64_t cols,
                                 int steps) {
  CHECK(rows >= 1 && cols >= 1 && rows * cols <= max_numel_ && std::min(rows, cols) <= max_small_,
        "NewtonSchulz: a ({}, {}) matrix does not fit the workspaces for {} elements with a "
        "smaller side of at most {}",
        rows, cols, max_numel_, max_small_);
  const bool tr = rows > cols;
  const int64_t r = tr ? cols : rows, c = tr ? rows : cols, n = r * c;
  // On the CPU, called inside Muon's per-matrix region (small matrices, one per thread) or outside
  // it (large ones): the backend's element passes open regions only outside, and its norm is
  // summed on the calling thread, so a matrix gets the same floats whichever way it runs.
  // x: M / norm as M lies, (rows, cols). The iteration is on X (r, c) = M / norm, or its
  // transpose when rows > cols; a tall M is kept as it is (X^T, (c, r)) and its products take
  // the transposed forms below, so that no transpose is copied.
  float* x = x_.data();
  backend_.normalize_frobenius(x, m, n, kNormEps);
  const auto k = kMuonQuintic;
  const float ka = static_cast<float>(k.a), kb = static_cast<float>(k.b),
              kc = static_cast<float>(k.c);
  float *a = a_.data(), *aa = aa_.data(), *b = b_.data(), *bx = bx_.data();
  const int ri = static_cast<int>(r), ci = static_cast<int>(c);
  for (int s = 0; s < steps; ++s) {
    const ConstTypedPtr xl = matmul_input(x_lowp_, x, n);
    if (tr) {
      // A (r, r) = X X^T = x^T x: the weight-gradient form (dweight += dout^T inp), from zero.
      backend_.fill_zero(TypedPtr(a), r * r);
      backend_.matmul_backward(TypedPtr(), a, nullptr, xl, xl, xl, ci, ri, ri);
    } else {
      backend_.matmul_forward(a, xl, xl, nullptr, r, ci, ri);  // A (r, r) = X X^T
    }
    const ConstTypedPtr al = matmul_input(a_lowp_, a, r * r);
    // A A (r, r) = A A^T: A is symmetric (up to the rounding of its two triangles).
    backend_.matmul_forward(aa, al, al, nullptr, r, ri, ri);
    backend_.combine(b, a, aa, r * r, kb, kc);  // B = b A + c A A
    const ConstTypedPtr bl = matmul_input(b_lowp_, b, r * r);
    if (tr) {
      // (B X)^T (c, r) = x B^T: the forward form, inp x (c, r), weight B (r, r).
      backend_.matmul_forward(bx, xl, bl, nullptr, c, ri, ri);
    } else {
      // B X (r, c) = dout (r, r) . weight (r, c): the input-gradient form of the matmul op.
      backend_.matmul_backward_overwrite(bx, nullptr, nullptr, bl, xl, xl, r, ci, ri);
    }
    backend_.scale_add(x, bx, n, ka);
  }
  backend_.copy_bytes(out, x, static_cast<size_t>(n) * sizeof(float));  // (rows, cols) either way
}

}  // namespace nanogpt
