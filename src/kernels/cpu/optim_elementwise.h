// The element loops of SGD's update, the gradient norm and clipping, the grad scaler's
// unscale-and-check and the weights' moving average (kernels/cpu/optim_elementwise.cpp), compiled for every
// CPU target and dispatched at run time. Each is serial over one span: the callers split tensors
// between their threads.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>

namespace nanogpt::optim_loops {

// Thread tid's slice [begin, end) of a tensor of n elements split over `threads`, in multiples of
// 16 elements (whole vectors on every target; the same slices whatever the caller).
inline std::pair<int64_t, int64_t> thread_slice(int64_t n, int64_t threads, int64_t tid) {
  const int64_t chunk = ((n + threads - 1) / threads + 15) / 16 * 16;
  const int64_t begin = std::min(n, tid * chunk);
  return {begin, std::min(n, begin + chunk)};
}

// p (n) -= lr * (b = mu * b + (g + wd * p)): SGD with momentum buffer b.
void sgd_momentum(float* p, const float* g, float* b, int64_t n, float lr, float wd, float mu);
// p (n) -= lr * (g + wd * p): SGD without momentum.
void sgd_plain(float* p, const float* g, int64_t n, float lr, float wd);
// sum of (g * unscale)^2 over n elements, each product rounded to float, summed in double.
double sum_of_squares(const float* g, int64_t n, float unscale);
// avg (n) = decay * avg + (1 - decay) * x: an exponential moving average's step.
void lerp_toward(float* avg, const float* x, int64_t n, float decay);
// g (n) *= scale.
void scale(float* g, int64_t n, float scale);
// g (n) *= inv; whether every result is finite.
bool scale_and_check_finite(float* g, int64_t n, float inv);

}  // namespace nanogpt::optim_loops
