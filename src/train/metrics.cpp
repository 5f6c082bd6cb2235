// MFU arithmetic, the metrics.jsonl writer and human-readable formatting of sizes and durations.
#include "train/metrics.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/check.h"

namespace nanogpt {

double flops_per_token(const ModelConfig& c, int64_t num_params_no_wpe) {
  double L = c.n_layer, H = c.n_head, Q = c.head_size(), T = c.block_size;
  return 6.0 * static_cast<double>(num_params_no_wpe) + 12.0 * L * H * Q * T;
}

double model_flops_utilization(double fpt, double tokens, double seconds, double peak_flops) {
  if (seconds <= 0 || peak_flops <= 0) return 0;
  return fpt * tokens / seconds / peak_flops;
}

MfuPeak mfu_peak_for(const ComputePeaks& peaks) {
  return {peaks.matmul(), peaks.matmul_unit(), peaks.matmul_from_cache()};
}

MetricsLog::MetricsLog(const std::string& path, bool append)
    : path_(path), out_(path, append ? std::ios::app : std::ios::trunc) {
  CHECK(out_.good(), "cannot write metrics file '{}' (is the directory writable?)", path);
}

void MetricsLog::write(const nlohmann::ordered_json& record) {
  if (!out_.is_open()) return;
  out_ << record.dump() << "\n";
  out_.flush();
}

double last_elapsed_seconds(const std::string& path) {
  std::ifstream in(path);
  double last = 0;
  std::string line;
  while (std::getline(in, line)) {
    try {
      auto j = nlohmann::json::parse(line);
      if (j.is_object() && j.contains("elapsed_s") && j["elapsed_s"].is_number()) {
        last = std::max(last, j["elapsed_s"].get<double>());
      }
    } catch (const std::exception&) {
      // a torn line: skipped
    }
  }
  return last;
}

std::string format_bytes(int64_t bytes) {
  double b = static_cast<double>(bytes);
  if (b >= 1024.0 * 1024 * 1024) return fmt::format("{:.2f} GiB", b / (1024.0 * 1024 * 1024));
  if (b >= 1024.0 * 1024) return fmt::format("{:.1f} MiB", b / (1024.0 * 1024));
  if (b >= 1024.0) return fmt::format("{:.1f} KiB", b / 1024.0);
  return fmt::format("{} B", bytes);
}

std::string format_duration(double seconds) {
  if (seconds < 0) seconds = 0;
  auto s = static_cast<int64_t>(seconds + 0.5);
  if (s >= 3600) return fmt::format("{}h {:02}m", s / 3600, (s % 3600) / 60);
  if (s >= 60) return fmt::format("{}m {:02}s", s / 60, s % 60);
  return fmt::format("{}s", s);
}

}  // namespace nanogpt

namespace nanogpt {

std::string format_rank_memory(const std::vector<int64_t>& tracked,
                               const std::vector<int64_t>& rss) {
  if (tracked.size() == 1)
    return fmt::format("{} (rss {})", format_bytes(tracked[0]), format_bytes(rss[0]));
  std::string out;
  for (size_t r = 0; r < tracked.size(); ++r) {
    out += fmt::format("{}r{} {} (rss {})", r ? ", " : "", r, format_bytes(tracked[r]),
                       format_bytes(rss[r]));
  }
  return out;
}

}  // namespace nanogpt
