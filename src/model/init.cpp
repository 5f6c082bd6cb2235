// Weight init from the parameter table (see init.h).
#include "model/init.h"

#include <cmath>
#include <cstring>

#include "core/rng.h"

namespace nanogpt {

namespace {

// Fills out[0..n) with N(0, std): Box-Muller, both values of each pair used.
void fill_normal(float* out, int64_t n, float std, Rng& rng) {
  for (int64_t i = 0; i < n; i += 2) {
    double u1 = rng.uniform_double();
    const double u2 = rng.uniform_double();
    if (u1 < 1e-300) u1 = 1e-300;
    const double r = std::sqrt(-2.0 * std::log(u1)) * std;
    out[i] = static_cast<float>(r * std::cos(2.0 * M_PI * u2));
    if (i + 1 < n) out[i + 1] = static_cast<float>(r * std::sin(2.0 * M_PI * u2));
  }
}

}  // namespace

void init_weights(const ParamTable& table, float* params, uint64_t seed) {
  std::memset(params, 0, static_cast<size_t>(table.total_numel()) * sizeof(float));
  Rng rng(seed);
  for (const ParamSpec& s : table.specs()) {
    float* p = params + s.offset;
    if (s.init_one) {
      for (int64_t i = 0; i < s.numel; ++i) p[i] = 1.0f;
    } else if (s.init_std > 0.0f) {
      fill_normal(p, s.numel, s.init_std, rng);
    }  // else zeros (biases)
  }
}

}  // namespace nanogpt
