// CpuBackend's optimizer ops (kernels/optimizer_ops.h): the dispatched element loops
// (adamw_update.h, optim_elementwise.h, muon_loops.h) over the host's threads. A pass over a
// tensor table runs in one OpenMP region, each thread taking its slice of every tensor
// (optim_loops::thread_slice: the same slices whatever the pass), so that results do not depend on
// the thread count; single-array passes open a region only when they are worth one and the caller
// is not inside one already (core/parallel_for.h: Muon's small matrices run one a thread).
#include <omp.h>

#include <algorithm>
#include <cmath>

#include "core/parallel_for.h"
#include "kernels/cpu/adamw_update.h"
#include "kernels/cpu/convert.h"  // narrow: the rounding of cpu::convert, one block at a time
#include "kernels/cpu/muon_loops.h"
#include "kernels/cpu/optim_elementwise.h"
#include "kernels/cpu_backend.h"

namespace nanogpt {
namespace {

// Element passes over fewer elements run on one thread (a parallel region costs more than them).
constexpr int64_t kParallelMin = 1 << 15;

// In one parallel region, for every item i: body(i, begin, end) on this thread's slice of span i.
template <class Item, class SpanOf, class Body>
void for_each_thread_slice(ItemList<Item> items, SpanOf span_of, Body body) {
#pragma omp parallel
  {
    const int64_t nt = omp_get_num_threads(), tid = omp_get_thread_num();
    for (const Item& item : items) {
      const TensorSpan s = span_of(item);
      const auto [begin, end] = optim_loops::thread_slice(s.numel, nt, tid);
      body(item, s.offset + begin, end - begin);
    }
  }
}

}  // namespace

void CpuBackend::adamw_step(const AdamWArenas& a, ItemList<AdamWTensorStep> tensors,
                            const AdamWConstants& k, const GradTransform* fused,
                            TypedPtr params_lowp) {
  auto span_of = [](const AdamWTensorStep& t) { return t.span; };
  if (!fused) {
    for_each_thread_slice(tensors, span_of,
                          [&](const AdamWTensorStep& t, int64_t off, int64_t n) {
                            cpu::adamw_update(a.params + off, a.grads + off, a.m + off, a.v + off,
                                              n, k, t.keep, t.step_size);
                          });
    return;
  }
  const GradTransform x = *fused;
  // The same slices as the plain step, walked in blocks so that each block of updated params is
  // still in L1 when it is rounded into the 16-bit copy.
  for_each_thread_slice(tensors, span_of, [&](const AdamWTensorStep& t, int64_t off0, int64_t n0) {
    for (int64_t b = 0; b < n0; b += cpu::kConvertBlock) {
      const int64_t off = off0 + b, n = std::min(cpu::kConvertBlock, n0 - b);
      cpu::adamw_update_fused(a.params + off, a.grads + off, a.m + off, a.v + off, n, k, t.keep,
                              t.step_size, x);
      if (params_lowp) cpu::narrow(params_lowp.at(off), a.params + off, n);
    }
  });
}

void CpuBackend::sgd_step(float* params, const float* grads, float* momentum,
                          ItemList<SgdTensorStep> tensors, float lr, float mu) {
  for_each_thread_slice(
      tensors, [](const SgdTensorStep& t) { return t.span; },
      [&](const SgdTensorStep& t, int64_t off, int64_t n) {
        if (momentum) {
          optim_loops::sgd_momentum(params + off, grads + off, momentum + off, n, lr,
                                    t.weight_decay, mu);
        } else {
          optim_loops::sgd_plain(params + off, grads + off, n, lr, t.weight_decay);
        }
      });
}

double CpuBackend::sum_of_squares(const float* grads, ItemList<TensorSpan> tensors,
                                  float unscale) {
  double sum = 0.0;
#pragma omp parallel reduction(+ : sum)
  {
    // Manual static split of every tensor (an orphaned `omp for reduction` cannot reduce into
    // the region's private sum).
    const int64_t nt = omp_get_num_threads(), tid = omp_get_thread_num();
    for (const TensorSpan& s : tensors) {
      const auto [begin, end] = optim_loops::thread_slice(s.numel, nt, tid);
      const double acc = optim_loops::sum_of_squares(grads + s.offset + begin, end - begin, unscale);
      sum += acc;
    }
  }
  return sum;
}

void CpuBackend::scale_tensors(float* grads, ItemList<TensorSpan> tensors, float s) {
  for_each_thread_slice(
      tensors, [](const TensorSpan& t) { return t; },
      [&](const TensorSpan&, int64_t off, int64_t n) { optim_loops::scale(grads + off, n, s); });
}

bool CpuBackend::scale_and_check_finite(float* grads, int64_t n, float inv) {
  int bad = 0;
#pragma omp parallel reduction(| : bad)
  {
    const auto [begin, end] =
        optim_loops::thread_slice(n, omp_get_num_threads(), omp_get_thread_num());
    bad |= !optim_loops::scale_and_check_finite(grads + begin, end - begin, inv);
  }
  return bad == 0;
}

void CpuBackend::lerp_toward(float* avg, const float* x, int64_t n, float decay) {
  parallel_ranges(n, n >= kParallelMin, [&](int64_t i0, int64_t i1) {
    optim_loops::lerp_toward(avg + i0, x + i0, i1 - i0, decay);
  });
}

void CpuBackend::muon_momentum(float* buf, float* d, const float* g, int64_t n, float mu,
                               bool nesterov) {
  parallel_ranges(n, n >= kParallelMin, [&](int64_t j0, int64_t j1) {
    muon_loops::momentum(buf + j0, d + j0, g + j0, j1 - j0, mu, nesterov);
  });
}

void CpuBackend::muon_update(float* p, const float* o, int64_t n, float keep, float step) {
  parallel_ranges(n, n >= kParallelMin, [&](int64_t j0, int64_t j1) {
    muon_loops::update(p + j0, o + j0, j1 - j0, keep, step);
  });
}

double CpuBackend::frobenius_sum_sq(const float* m, int64_t n) {
  // On the calling thread, one code path: a matrix gets the same floats whichever way Muon runs it
  // (an OpenMP reduction's order differs between its parallel and serial forms: on ARM64 with SVE
  // the spread-over-threads values then differed from the one-thread ones).
  double sum_sq = 0;
#pragma omp simd reduction(+ : sum_sq)
  for (int64_t i = 0; i < n; ++i) sum_sq += static_cast<double>(m[i]) * m[i];
  return sum_sq;
}

void CpuBackend::normalize_frobenius(float* x, const float* m, int64_t n, double eps) {
  const float s = static_cast<float>(1.0 / (std::sqrt(frobenius_sum_sq(m, n)) + eps));
  parallel_ranges(n, n >= kParallelMin, [&](int64_t i0, int64_t i1) {
    muon_loops::scale_into(x + i0, m + i0, i1 - i0, s);
  });
}

void CpuBackend::scale_add(float* x, const float* y, int64_t n, float a) {
  parallel_ranges(n, n >= kParallelMin, [&](int64_t i0, int64_t i1) {
    muon_loops::scale_add(x + i0, y + i0, i1 - i0, a);
  });
}

void CpuBackend::combine(float* out, const float* u, const float* v, int64_t n, float a,
                         float b) {
  muon_loops::combine(out, u, v, n, a, b);  // (r, r): small, on the calling thread as before
}

}  // namespace nanogpt
