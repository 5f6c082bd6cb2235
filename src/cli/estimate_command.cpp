// `nanogpt estimate`: what a training config will cost, before anything runs
// (experiments/estimate).
#include <fmt/format.h>
#include <omp.h>

#include <algorithm>

#include "cli/commands.h"
#include "core/config.h"
#include "core/cpu_info.h"
#include "distributed/zero1.h"
#include "experiments/estimate.h"
#include "kernels/gpu_flash_rule.h"
#include "model/params.h"
#include "train/metrics.h"
#include "train/train_config.h"

namespace nanogpt::cli {

std::string estimate_help() {
  return "usage: nanogpt estimate [config files...] [--key=value ...]\n"
         "Takes the keys of `nanogpt train` and prints, without training: parameters, FLOPs per\n"
         "iteration (nanoGPT's formula and the exact matmul count), peak memory broken down by\n"
         "what holds it (weights, grads, optimizer state, activations by kind, classifier,\n"
         "backward scratch) and the time per iteration at the machine's measured peak.\n"
         "--world_size=N: per rank of `mpirun -np N` (with zero_stage=1 the optimizer state is\n"
         "sharded, and in bfloat16/float16 the float32 master weights too). --measure_peak=False\n"
         "skips the peak probe. --device=cuda: the GPU memory of `train --device=cuda` instead\n"
         "(dtype auto means bfloat16 there), per GPU of --world_size: the one model's buffers and\n"
         "the CUDA backend's own. Keys: see `nanogpt help train`.\n";
}

namespace {

// `estimate --device=cuda`: the one model's memory, per GPU of `world_size` (the trainer's own
// allocation functions, as on the CPU: experiments/estimate.h), resolved as `train --device=cuda`
// resolves the run (dtype auto is bfloat16; float32 attention keeps its T x T probabilities), plus
// the CUDA backend's own buffers: its largest op temporary and cuBLASLt's workspace.
int print_gpu_estimate(TrainConfig config, int world_size) {
  if (config.dtype == "auto") config.dtype = "bfloat16";  // as train --device=cuda resolves it
  TrainConfig resolved = resolve_for_estimate(config);
  DType dtype = DType::kBF16;
  parse_dtype(resolved.dtype, dtype);
  const ModelConfig& m = resolved.model;
  if (dtype == DType::kF32 && resolved.attention == "flash" &&
      !gpu_flash_attention_supported(dtype, m.n_embd, m.n_head)) {
    resolved.attention = "naive";
  }
  TrainingEstimate e = estimate_training(resolved, world_size);
  // The backend's temporary is one op's at a time, the largest: the input gradient of the MLP's
  // projection or the recomputed activation (N x 4C), or the attention backward's (3 N C and, for
  // heads other than 64, N x NH statistics).
  const int64_t N = resolved.batch_size * m.block_size, C = m.n_embd;
  const int64_t elem = static_cast<int64_t>(dtype_size(dtype));
  const int64_t temp =
      std::max(N * 4 * C * elem, (3 * N * C * elem + 255) / 256 * 256 + N * m.n_head * 4);
  e.memory.push_back({"CUDA backend's largest op temporary", temp});
  e.memory.push_back({"cuBLASLt's workspace", int64_t{32} << 20});
  e.peak_bytes += temp + (int64_t{32} << 20);
  fmt::print(
      "GPU (--device=cuda), {}, {} attention{}{}:\n", dtype_name(dtype),
      resolved.attention == "naive" ? "naive (T x T probabilities)" : "flash",
      world_size == 1 ? "" : fmt::format(", per GPU of {}", world_size),
      resolved.zero_stage == 1 ? ", ZeRO-1" : "");
  std::fputs(format_estimate(e, 0, "").c_str(), stdout);
  fmt::print("  (plus the CUDA context, ~0.5 GiB)\n");
  return 0;
}

}  // namespace

int estimate_command(const Args& args) {
  TrainConfig config;
  bool measure_peak = true;
  int64_t world_size = 1;
  std::vector<ConfigAssignment> assignments;
  for (auto& a : parse_command_line(args)) {
    if (a.key == "measure_peak") {
      CHECK(std::holds_alternative<bool>(a.value), "{}: measure_peak expects True or False",
            a.origin);
      measure_peak = std::get<bool>(a.value);
    } else if (a.key == "world_size") {
      CHECK(std::holds_alternative<int64_t>(a.value) && std::get<int64_t>(a.value) >= 1 &&
                std::get<int64_t>(a.value) <= 65536,
            "{}: world_size expects the number of ranks (1..65536), as in mpirun -np N", a.origin);
      world_size = std::get<int64_t>(a.value);
    } else {
      assignments.push_back(a);
    }
  }
  apply_assignments(config, assignments);
  if (config.device != "cpu") return print_gpu_estimate(config, static_cast<int>(world_size));
  const TrainConfig resolved = resolve_for_estimate(config);
  const TrainingEstimate estimate = estimate_training(resolved, static_cast<int>(world_size));
  MfuPeak peak;
  if (measure_peak) {
    if (resolved.threads > 0) omp_set_num_threads(static_cast<int>(resolved.threads));
    const int threads = omp_get_max_threads();
    DType dtype = DType::kF32;
    parse_dtype(resolved.dtype, dtype);  // validated by resolve_for_estimate
    peak = mfu_peak_for(measure_compute_peaks(dtype, threads));
  }
  std::fputs(format_estimate(estimate, peak.flops_per_s, peak.arithmetic).c_str(), stdout);
  return 0;
}

}  // namespace nanogpt::cli
