// Weight init from the parameter table (see init.h).
#include "model/init.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/rng.h"

namespace nanogpt {

namespace {

// Fills the elements [lo, hi) of a tensor of n values drawn N(0, std) (Box-Muller, both values of
// each pair used) into out[0, hi - lo); the pairs before lo are drawn and dropped.
void fill_normal(float* out, int64_t n, int64_t lo, int64_t hi, float std, Rng& rng) {
  for (int64_t i = 0; i < n; i += 2) {
    double u1 = rng.uniform_double();
    const double u2 = rng.uniform_double();
    if (i + 1 < lo || i >= hi) continue;
    if (u1 < 1e-300) u1 = 1e-300;
    const double r = std::sqrt(-2.0 * std::log(u1)) * std;
    if (i >= lo) out[i - lo] = static_cast<float>(r * std::cos(2.0 * M_PI * u2));
    if (i + 1 < n && i + 1 >= lo && i + 1 < hi) {
      out[i + 1 - lo] = static_cast<float>(r * std::sin(2.0 * M_PI * u2));
    }
  }
}

}  // namespace

void init_weights_range(const ParamTable& table, uint64_t seed, int64_t begin, int64_t end,
                        float* out) {
  std::memset(out, 0, static_cast<size_t>(end - begin) * sizeof(float));
  Rng rng(seed);
  for (const ParamSpec& s : table.specs()) {
    // The part [lo, hi) of this tensor inside [begin, end), in tensor coordinates.
    const int64_t lo = std::clamp<int64_t>(begin - s.offset, 0, s.numel);
    const int64_t hi = std::clamp<int64_t>(end - s.offset, 0, s.numel);
    float* p = out + (s.offset + lo - begin);
    if (s.init_one) {
      for (int64_t i = lo; i < hi; ++i) p[i - lo] = s.init_constant;
    } else if (s.init_std > 0.0f) {
      fill_normal(p, s.numel, lo, hi, s.init_std, rng);
    }  // else zeros (biases)
  }
}

void init_weights(const ParamTable& table, float* params, uint64_t seed) {
  init_weights_range(table, seed, 0, table.total_numel(), params);
}

}  // namespace nanogpt
