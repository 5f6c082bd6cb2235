// emulation_probe: a fixed workload that scripts/test_arm64.sh times under qemu at its start, to
// scale each emulated phase's time limit by how fast this host emulates (qemu's SVE helpers ran
// ~5.6x slower on an Intel Xeon host than on an AMD EPYC one). Two parts, the two costs the
// emulated tests pay: vector multiply-adds at the best Highway target of the (emulated) CPU, as the
// kernels run, and scalar float64 arithmetic with a square root and a division, as the tests'
// references and finite differences run. Prints `probe: target T vector S s scalar S s total S s`.
// The workload never changes: limits are calibrated against the seconds it took on a known host.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "emulation_probe.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

HWY_BEFORE_NAMESPACE();
namespace nanogpt::probe::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// acc = acc * x + y over n floats, `rounds` times (n a multiple of every target's lane count).
float MulAddRounds(float* HWY_RESTRICT acc, const float* HWY_RESTRICT x,
                   const float* HWY_RESTRICT y, size_t n, int rounds) {
  const hn::ScalableTag<float> d;
  for (int r = 0; r < rounds; ++r) {
    for (size_t i = 0; i < n; i += hn::Lanes(d)) {
      const auto a = hn::LoadU(d, acc + i);
      hn::StoreU(hn::MulAdd(a, hn::LoadU(d, x + i), hn::LoadU(d, y + i)), d, acc + i);
    }
  }
  auto sum = hn::Zero(d);
  for (size_t i = 0; i < n; i += hn::Lanes(d)) sum = hn::Add(sum, hn::LoadU(d, acc + i));
  return hn::GetLane(hn::SumOfLanes(d, sum));
}

const char* TargetName() { return hwy::TargetName(HWY_TARGET); }

}  // namespace nanogpt::probe::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nanogpt::probe {
HWY_EXPORT(MulAddRounds);
HWY_EXPORT(TargetName);

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Scalar float64: a normalization per row of 64 (square root, division), as a reference does.
double scalar_rounds(std::vector<double>& v, int rounds) {
  double total = 0;
  for (int r = 0; r < rounds; ++r) {
    for (size_t row = 0; row + 64 <= v.size(); row += 64) {
      double ss = 0;
      for (size_t i = 0; i < 64; ++i) ss += v[row + i] * v[row + i];
      const double s = 1.0 / std::sqrt(ss / 64 + 1e-5);
      for (size_t i = 0; i < 64; ++i) v[row + i] = v[row + i] * s + 1e-3 * double(i);
      total += s;
    }
  }
  return total;
}

}  // namespace
}  // namespace nanogpt::probe

int main() {
  using namespace nanogpt::probe;
  constexpr size_t kN = 4096;
  std::vector<float> acc(kN, 0.5f), x(kN, 0.999f), y(kN, 1e-3f);
  std::vector<double> v(kN);
  for (size_t i = 0; i < kN; ++i) v[i] = std::sin(double(i));
  auto t0 = std::chrono::steady_clock::now();
  const float vector_result =
      HWY_DYNAMIC_DISPATCH(MulAddRounds)(acc.data(), x.data(), y.data(), kN, 12000);
  const double vector_s = seconds_since(t0);
  t0 = std::chrono::steady_clock::now();
  const double scalar_result = scalar_rounds(v, 4000);
  const double scalar_s = seconds_since(t0);
  // The results are printed so that no part is optimized away.
  std::printf("probe: target %s vector %.3f s scalar %.3f s total %.3f s (check %g %g)\n",
              HWY_DYNAMIC_DISPATCH(TargetName)(), vector_s, scalar_s, vector_s + scalar_s,
              double(vector_result), scalar_result);
  return std::isfinite(vector_result) && std::isfinite(scalar_result) ? 0 : 1;
}
#endif  // HWY_ONCE
