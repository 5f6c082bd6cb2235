// Seed 000's question as a command: for a fixed number of tokens per optimizer step, which
// micro-batch x gradient-accumulation split (and dtype) is fastest here? Every split whose
// estimated peak memory fits the cap (experiments/estimate) is trained for a few steps in this
// process and timed; the fastest wins.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/compute_peaks.h"

#include "train/train_config.h"

namespace nanogpt {

struct AutotuneOptions {
  int64_t tokens_per_step = 0;       // B * T * accumulation of every split
  int64_t max_memory_bytes = 0;      // 0 = no cap
  std::vector<std::string> dtypes;   // empty = the config's dtype
  int64_t timed_steps = 3;           // after one warm-up step
};

struct AutotuneTrial {
  int64_t micro_batch = 0, accumulation = 0;
  std::string dtype;
  int64_t estimated_peak_bytes = 0;
  std::string skipped;  // why it was not run ("" = it ran)
  double ms_per_step = 0, tokens_per_s = 0, mfu = 0;
  int64_t measured_peak_bytes = 0;
};

struct AutotuneResult {
  std::vector<AutotuneTrial> trials;
  int best = -1;  // index into trials of the fastest trial that ran; -1 if none ran
  // The measured peaks for each dtype tried (in the order of first trial); a trial's MFU is against
  // its dtype's matmul unit (kernels/compute_peaks.h).
  std::vector<ComputePeaks> peaks;
  const ComputePeaks& peaks_for(DType dtype) const;
};

// Throws nanogpt::Error if tokens_per_step is not a multiple of block_size.
AutotuneResult autotune(const TrainConfig& config, const AutotuneOptions& options);

// The table printed by `nanogpt autotune`, best marked.
std::string format_autotune(const AutotuneResult& result, const AutotuneOptions& options);

// The config with the winner's batch_size, gradient_accumulation_steps and dtype.
TrainConfig autotune_winner_config(const TrainConfig& config, const AutotuneResult& result);

// "2GiB", "512MiB", "1.5GB", "1000000" -> bytes. Throws nanogpt::Error naming `key` otherwise.
int64_t parse_memory_size(const std::string& text, const std::string& key);

}  // namespace nanogpt
