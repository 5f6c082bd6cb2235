// OptimizerOps: the element passes of the optimizers (AdamW, SGD, Muon's momentum and
// Newton-Schulz steps), the gradient norm and clipping, the loss scaler's unscale-and-check and the
// weights' moving average, on a backend's memory. Part of Backend (kernels/backend.h): optim/ and
// train/ compute through it, so that one optimizer of each algorithm runs on every device. Arenas
// are in the parameter layout (model/params.h); a TensorSpan names one tensor's elements in them.
// How a backend splits a pass between its threads or blocks is its own; the CPU backend's results
// do not depend on its thread count.
#pragma once

#include <cstdint>
#include <cstddef>
#include <vector>

#include "kernels/dtype.h"

namespace nanogpt {

// A read-only view of a list of items (std::span's part this header needs: the CUDA backend's
// files are compiled as C++17, which has no std::span).
template <class T>
class ItemList {
 public:
  ItemList() = default;
  ItemList(const T* data, size_t size) : data_(data), size_(size) {}
  ItemList(const std::vector<T>& v) : data_(v.data()), size_(v.size()) {}  // NOLINT: a view
  template <size_t N>
  ItemList(const T (&a)[N]) : data_(a), size_(N) {}  // NOLINT: a view
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  size_t size() const { return size_; }

 private:
  const T* data_ = nullptr;
  size_t size_ = 0;
};

// Elements [offset, offset + numel) of an arena.
struct TensorSpan {
  int64_t offset = 0;
  int64_t numel = 0;
};

// One AdamW step's constants, as float (optim/adamw.h gives the formula).
struct AdamWConstants {
  float b1 = 0, one_minus_b1 = 0, b2 = 0, one_minus_b2 = 0, bc2_sqrt = 1, eps = 0;
};
// One tensor's part of it: its step size lr_i / (1 - b1^t) and its decay factor 1 - lr_i * wd
// (1 for a tensor without decay).
struct AdamWTensorStep {
  TensorSpan span;
  float step_size = 0;
  float keep = 1;
};

// How the fused optimizer step uses each gradient: (g * unscale) * clip, then g = 0 if zero.
struct GradTransform {
  float unscale = 1.0f, clip = 1.0f;
  bool zero = false;
};

// One SGD tensor: its span and its weight decay (0 for a tensor without decay).
struct SgdTensorStep {
  TensorSpan span;
  float weight_decay = 0;
};

// The four arenas of an AdamW step (each at least as long as the spans reach).
struct AdamWArenas {
  float* params = nullptr;
  float* grads = nullptr;  // read only unless a fused transform zeroes it
  float* m = nullptr;
  float* v = nullptr;
};

class OptimizerOps {
 public:
  virtual ~OptimizerOps() = default;

  // For each tensor, element by element (PyTorch's order of operations):
  //   m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2; p = p keep - step m / (sqrt(v) / bc2 + eps).
  // fused null: g as it is, never written. Else g is used as *fused says and params_lowp
  // (nullable: the 16-bit weight copy, whole arena) receives round(p) for every stepped element.
  virtual void adamw_step(const AdamWArenas& a, ItemList<AdamWTensorStep> tensors,
                          const AdamWConstants& k, const GradTransform* fused,
                          TypedPtr params_lowp) = 0;
  // For each tensor: p -= lr * (b = mu b + (g + wd p)) with momentum buffer b, or, b null,
  // p -= lr * (g + wd p).
  virtual void sgd_step(float* params, const float* grads, float* momentum,
                        ItemList<SgdTensorStep> tensors, float lr, float mu) = 0;
  // Sum over the tensors of (g * unscale)^2, each product rounded to float, summed in double (the
  // squared global gradient norm; inf/nan anywhere makes it non-finite).
  virtual double sum_of_squares(const float* grads, ItemList<TensorSpan> tensors,
                                float unscale) = 0;
  // g *= s over the tensors.
  virtual void scale_tensors(float* grads, ItemList<TensorSpan> tensors, float s) = 0;
  // g (n) *= inv; whether every result is finite.
  virtual bool scale_and_check_finite(float* grads, int64_t n, float inv) = 0;
  // avg (n) = decay * avg + (1 - decay) * x: the weight average's step.
  virtual void lerp_toward(float* avg, const float* x, int64_t n, float decay) = 0;

  // Muon's passes. buf (n) = mu buf + g; d = g + mu buf (Nesterov) or buf.
  virtual void muon_momentum(float* buf, float* d, const float* g, int64_t n, float mu,
                             bool nesterov) = 0;
  // p (n) = p keep - step o.
  virtual void muon_update(float* p, const float* o, int64_t n, float keep, float step) = 0;
  // Newton-Schulz's passes: sum of m^2 in double (one matrix, the caller's order: the same floats
  // however the step is spread); x = m * float(1 / (sqrt(that sum) + eps)), the start of the
  // iteration, with no value brought back to the host (a device keeps the norm in its memory);
  // x = a x + y; out = a u + b v.
  virtual double frobenius_sum_sq(const float* m, int64_t n) = 0;
  virtual void normalize_frobenius(float* x, const float* m, int64_t n, double eps) = 0;
  virtual void scale_add(float* x, const float* y, int64_t n, float a) = 0;
  virtual void combine(float* out, const float* u, const float* v, int64_t n, float a,
                       float b) = 0;
};

}  // namespace nanogpt
