// CPU identification, the fp32 FMA and bf16 dot-product peak probes behind MFU and the profile
// table, and the bandwidth probe.
#include "core/cpu_info.h"

#include <omp.h>
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "core/cpu_target.h"
#include "core/isa_required.h"
#include "core/timer.h"

namespace nanogpt {

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto pos = line.find(':');
      if (pos != std::string::npos) return line.substr(pos + 2);
    }
  }
  return "unknown CPU";
}

#if !defined(__x86_64__)
namespace {
// ARM64 (and any architecture without isa_required.h's bits): the CPU's levels above baseline.
std::string cpu_levels_offered() {
  std::vector<std::string> levels = CpuTarget("").offered();
  std::erase(levels, std::string("baseline"));
  return fmt::format("{}", fmt::join(levels, " "));
}
}  // namespace
#endif

std::string cpu_simd_features() {
#if defined(__x86_64__)
  return isa_names(nanogpt_cpu_isa() & (kIsaAvx2 | kIsaFma | kIsaAvx512f | kIsaAvx512bf16));
#else
  return cpu_levels_offered();
#endif
}

std::string cpu_isa_offered() {
#if defined(__x86_64__)
  return isa_names(nanogpt_cpu_isa());
#else
  return cpu_levels_offered();
#endif
}

bool have_bf16_dot_products() {
  // The CPU has them, NANOGPT_CPU_TARGET does not cap the dispatch below avx512_bf16, and the
  // dispatch runs the AVX3_DL copy, the one compiled with them (attention_bf16.cpp, the probe).
  // Asked per matmul and attention call: no cpuid here (CpuTarget::cap_allows_bf16_dot).
  return (nanogpt_cpu_isa() & kIsaAvx512bf16) != 0 && CpuTarget::cap_allows_bf16_dot() &&
         dispatched_hwy_target() == "AVX3_DL";
}

AutoDtype choose_auto_dtype() {
  if (have_bf16_dot_products()) {
    return {"bfloat16", "this CPU multiplies bfloat16 natively (avx512_bf16)"};
  }
  return {"float32",
          "this CPU (or build) has no native bfloat16 products (avx512_bf16 / amx_bf16)"};
}

namespace {

// FLOPs done by one call: 12 independent FMA chains at the vector width of the CPU target the
// dispatch runs (dispatched_probes.cpp), so a capped run is measured against its own peak.
double fma_kernel(int64_t iters, float seed) { return fma_probe_flops(iters, seed); }

// FLOPs done by one call: 12 independent vdpbf16ps chains, each instruction 32 products and sums
// (dispatched_probes.cpp: the AVX3_DL copy).
double bf16_dot_kernel(int64_t iters, float seed) { return bf16_dot_probe_flops(iters, seed); }

// The best FLOP/s of five runs of `kernel(iters, seed)` on `threads` threads at once (the machine
// is shared and noisy). A run is 10M steps (~15 ms per thread at full speed); where a short first
// run shows the CPU over 10x slower than that (an emulator such as qemu: scripts/test_arm64.sh),
// fewer, so that the probe takes about 0.1 s instead of minutes: the steps are timed all the same.
template <class Kernel>
double best_of_five(int threads, Kernel kernel) {
  constexpr int64_t kFullIters = 10'000'000, kTrialIters = 100'000;
  constexpr double kRunSeconds = 0.015;
  Timer trial;
  kernel(kTrialIters, 0.0f);
  const double step_s = trial.seconds() / static_cast<double>(kTrialIters);
  int64_t iters = kFullIters;
  if (step_s * kFullIters > 10 * kRunSeconds) {
    iters = std::max(kTrialIters, static_cast<int64_t>(kRunSeconds / step_s));
  }
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    double total = 0;
    Timer timer;
#pragma omp parallel num_threads(threads) reduction(+ : total)
    { total += kernel(iters, static_cast<float>(omp_get_thread_num())); }
    best = std::max(best, total / timer.seconds());
  }
  return best;
}

// 0 where the probe's arithmetic is missing from this build or CPU.
double run_probe(int threads, PeakProbe probe) {
  if (probe == PeakProbe::kFp32Fma) return best_of_five(threads, fma_kernel);
  if (have_bf16_dot_products()) return best_of_five(threads, bf16_dot_kernel);
  return 0;
}

std::filesystem::path default_cache_dir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    return std::filesystem::path(xdg) / "nanogpt";
  }
  if (const char* home = std::getenv("HOME"); home && *home) {
    return std::filesystem::path(home) / ".cache" / "nanogpt";
  }
  return std::filesystem::temp_directory_path() / "nanogpt-cache";
}

}  // namespace

double measure_memory_bandwidth(int threads) {
  const int64_t n = int64_t{8} << 20;  // floats per array: 32 MiB
  std::vector<float> a(n), b(n, 1.0f), c(n, 2.0f);
  double best = 0;
  for (int rep = 0; rep < 6; ++rep) {
    const float s = 0.5f + static_cast<float>(rep);
    Timer timer;
#pragma omp parallel for simd num_threads(threads) schedule(static)
    for (int64_t i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
    if (rep > 0)
      best = std::max(best, 3.0 * sizeof(float) * static_cast<double>(n) / timer.seconds());
  }
  volatile float sink = a[n / 2];
  (void)sink;
  return best;
}

PeakFlops remember_best_peak(const std::string& probe_key, double measured, int threads,
                             const std::string& cache_dir, bool use_cache) {
  namespace fs = std::filesystem;
  fs::path dir = cache_dir.empty() ? default_cache_dir() : fs::path(cache_dir);
  fs::path file = dir / "peak_flops.json";
  const std::string key = cpu_model_name() + " | " + cpu_simd_features() + " | threads " +
                          std::to_string(threads) + " | " + probe_key;
  // A probe on a busy machine reads low, so the cache keeps the best value ever measured here and
  // every run adds one more short probe to it.
  nlohmann::json cache = nlohmann::json::object();
  double cached = 0;
  if (use_cache) {
    std::ifstream in(file);
    if (in.good()) {
      try {
        in >> cache;
        if (cache.contains(key)) cached = cache[key].get<double>();
      } catch (const std::exception&) {
        cache = nlohmann::json::object();  // a damaged cache is measured anew
      }
    }
  }
  if (measured == 0) return PeakFlops{0, threads, false};  // no such arithmetic here
  PeakFlops peak{std::max(measured, cached), threads, cached >= measured};
  if (use_cache && measured > cached) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    cache[key] = measured;
    std::string tmp = (file.string() + ".tmp." + std::to_string(::getpid()));
    {
      std::ofstream out(tmp);
      if (out.good()) out << cache.dump(2) << "\n";
    }
    fs::rename(tmp, file, ec);
  }
  return peak;
}

PeakFlops measure_peak_flops(int threads, const std::string& cache_dir, bool use_cache,
                             PeakProbe probe) {
  // The fp32 probe runs at the dispatched target's vector width: its key names the target.
  const std::string probe_key =
      probe == PeakProbe::kBf16Dot ? "bf16 dot products" : dispatched_hwy_target();
  return remember_best_peak(probe_key, run_probe(threads, probe), threads, cache_dir, use_cache);
}

}  // namespace nanogpt
