// Loops over OpenMP threads that open a parallel region only when they will use it. libgomp builds
// a team for every `#pragma omp parallel` it meets, `if(false)` and nested ones included: ~1.3 us
// at the top level and ~2.7 us inside another region on this kind of VM (a nested region gets one
// thread anyway). Code that also runs inside regions (Muon's Newton-Schulz, one matrix per thread,
// with its conversions and element passes: ~450 such regions a step of the CPU speedrun) branches
// around its region on open_parallel_region instead of putting the condition in an `if` clause.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>

namespace nanogpt {

// Whether a loop should open a region: it is worth one and the caller is not inside one already.
inline bool open_parallel_region(bool worth) { return worth && !omp_in_parallel(); }

namespace parallel_for_detail {
// The one compiled copy of a loop body that both branches of parallel_ranges call. Two inlined
// copies may be compiled differently (on ARM64 with SVE Muon's passes then gave other floats in a
// region than outside one), and a range must give the same floats either way.
template <class Body>
[[gnu::noinline]] void run_range(const Body& body, int64_t begin, int64_t end) {
  body(begin, end);
}
}  // namespace parallel_for_detail

// body(begin, end) over [0, n): with open_parallel_region(worth), in a new region, one contiguous
// part per thread (the parts OpenMP's static schedule makes); else body(0, n) on the calling
// thread. Element passes whose every element is computed alike give the same values either way
// (one compiled copy of body runs in both).
template <class Body>
void parallel_ranges(int64_t n, bool worth, Body&& body) {
  if (!open_parallel_region(worth)) {
    parallel_for_detail::run_range(body, int64_t{0}, n);
    return;
  }
#pragma omp parallel
  {
    const int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t q = n / nt, r = n % nt;
    const int64_t begin = t * q + std::min(t, r);
    parallel_for_detail::run_range(body, begin, begin + q + (t < r ? 1 : 0));
  }
}

}  // namespace nanogpt
