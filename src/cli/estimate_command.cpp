// `nanogpt estimate`: what a training config will cost, before anything runs (experiments/estimate).
#include <fmt/format.h>
#include <omp.h>

#include "cli/commands.h"
#include "core/config.h"
#include "core/cpu_info.h"
#include "distributed/zero1.h"
#include "experiments/estimate.h"
#include "model/gpu_memory_plan.h"
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
         "(dtype auto means bfloat16 there), per GPU of --world_size (with zero_stage=1 AdamW's\n"
         "state and the float32 masters are sharded; gradients stay whole). Keys: see\n"
         "`nanogpt help train`.\n";
}

namespace {

// `estimate --device=cuda`: the GPU model's memory by part (model/gpu_memory_plan.h), per GPU of
// `world_size`. ZeRO-1 shards AdamW's m and v and, in 16 bits, the float32 masters (the 16-bit
// copy the kernels read stays whole, as do the gradients: they are all-reduced or reduce-scattered
// in buckets, in place) into zero1_shard_counts's largest shard.
int print_gpu_estimate(TrainConfig config, int world_size) {
  if (config.dtype == "auto") config.dtype = "bfloat16";  // as train --device=cuda resolves it
  const TrainConfig resolved = resolve_for_estimate(config);
  DType dtype = DType::kBF16;
  parse_dtype(resolved.dtype, dtype);
  const int B = static_cast<int>(resolved.batch_size), T = resolved.model.block_size;
  GpuMemoryPlan p = plan_gpu_memory(resolved.model, dtype, B, T, resolved.attention == "naive");
  const TrainingEstimate e = estimate_training(resolved, 1);
  const bool zero = resolved.zero_stage == 1;
  const int64_t numel = ParamTable(resolved.model).total_numel();
  const int64_t shard = zero1_shard_counts(numel, world_size).front();
  std::string masters = dtype == DType::kF32 ? "float32" : "float32 masters and the bfloat16 copy";
  std::string adam;
  if (zero) {
    p.optimizer = 8 * shard;
    if (dtype != DType::kF32) {
      p.params = 4 * shard + 2 * numel;
      masters = fmt::format("float32 masters: shard of {}, and the whole bfloat16 copy", world_size);
    }
    adam = fmt::format(" (ZeRO-1: shard of {})", world_size);
  }
  const std::string per_gpu =
      world_size == 1 ? ""
                      : fmt::format(", per GPU of {}{}", world_size,
                                    zero ? " (ZeRO-1)" : " (data parallel, every GPU whole)");
  fmt::print(
      "GPU (--device=cuda), {}, micro-batch {} x {}, {} attention{}:\n"
      "  parameters       {:.2f}M ({:.3g} GFLOP per iteration, nanoGPT's formula)\n"
      "  weights          {} ({})\n"
      "  gradients        {}{}\n"
      "  AdamW m, v       {}{}\n"
      "  activations      {}\n"
      "  classifier       {} (float32 logits and their gradient)\n"
      "  scratch          {}\n"
      "  total            {} of GPU memory (plus the CUDA context and cuBLASLt's 32 MiB)\n",
      dtype_name(dtype), B, T, p.flash_attention ? "flash" : "naive (T x T probabilities)",
      per_gpu, e.params / 1e6, e.flops_per_iter_nanogpt / 1e9, format_bytes(p.params), masters,
      format_bytes(p.grads), world_size > 1 ? " (whole on every GPU)" : "",
      format_bytes(p.optimizer), adam, format_bytes(p.activations), format_bytes(p.classifier),
      format_bytes(p.scratch), format_bytes(p.total()));
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
            "{}: world_size expects the number of ranks (1..65536), as in mpirun -np N",
            a.origin);
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
