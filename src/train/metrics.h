// Honest numbers for a training run: nanoGPT's MFU formula against the measured peak of this
// machine, and the machine-readable log out_dir/metrics.jsonl (one JSON object per line, floats
// written with round-trip precision so two runs can be compared bit for bit).
#pragma once

#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/cpu_info.h"
#include "kernels/compute_peaks.h"
#include "kernels/dtype.h"
#include "model/model_config.h"

namespace nanogpt {

// nanoGPT's estimate: flops per token = 6N + 12*L*H*Q*T, N = parameters without wpe,
// Q = head size, T = block_size. Per iteration: x tokens processed (B*T*accum).
double flops_per_token(const ModelConfig& config, int64_t num_params_no_wpe);

// Model FLOPs utilization in [0, 1]: flops_per_token * tokens / seconds / peak.
double model_flops_utilization(double flops_per_token, double tokens, double seconds,
                               double peak_flops);

// The peak a run's MFU is measured against: that of the unit its matmuls run on, as MFU on a GPU is
// taken against the bf16 (or tf32) dense peak (kernels/compute_peaks.h: fp32 FMAs for float32;
// for a 16-bit dtype the larger of its products' arithmetic (bf16 dot products, or fp32 FMAs where
// they widen) and the measured rate of oneDNN's matmul in that dtype, which is AMX's where the
// CPU has it). So MFU stays below 100%.
struct MfuPeak {
  double flops_per_s = 0;
  std::string arithmetic;  // "fp32 FMA", "bf16 dot products" or "bfloat16 matmul (oneDNN)"
  bool from_cache = false;
};
MfuPeak mfu_peak_for(const ComputePeaks& peaks);

// Appends JSON lines to a file, flushing each so a crash loses at most the line being written.
class MetricsLog {
 public:
  MetricsLog() = default;
  // append=false truncates (fresh run); append=true continues (resume).
  MetricsLog(const std::string& path, bool append);
  void write(const nlohmann::ordered_json& record);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::ofstream out_;
};

// The largest elapsed_s of the records in a metrics.jsonl (0 if none or no file): where a resumed
// run's clock continues.
double last_elapsed_seconds(const std::string& path);

// "12.3 MiB", "1.20 GiB".
std::string format_bytes(int64_t bytes);
// Peak memory for the log line: "A (rss B)" for one rank, "r0 A (rss B), r1 C (rss D)" for several.
// tracked and rss are indexed by rank and of the same length (>= 1).
std::string format_rank_memory(const std::vector<int64_t>& tracked,
                               const std::vector<int64_t>& rss);
// "1m 05s", "2h 03m".
std::string format_duration(double seconds);

}  // namespace nanogpt
