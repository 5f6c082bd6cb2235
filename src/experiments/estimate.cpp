// The training estimator (see estimate.h): sizes from the trainer's own allocation functions.
#include "experiments/estimate.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/json_util.h"
#include "distributed/data_parallel.h"
#include "distributed/zero1.h"
#include "io/checkpoint.h"
#include "kernels/dtype.h"
#include "model/activations.h"
#include "model/gpt.h"
#include "model/params.h"
#include "optim/muon.h"
#include "optim/optimizer.h"
#include "train/metrics.h"
#include "train/trainer.h"

namespace nanogpt {

namespace fs = std::filesystem;

namespace {

int64_t buffer_bytes(int64_t floats) { return (floats * 4 + 63) / 64 * 64; }

int dataset_vocab_size(const std::string& data_dir) {
  const fs::path path = fs::path(data_dir) / "meta.json";
  if (!fs::exists(path)) return 0;
  std::ifstream in(path);
  nlohmann::json meta;
  try {
    meta = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    fail("'{}' is not valid JSON: {}", path.string(), e.what());
  }
  if (!meta.is_object() || !meta.contains("vocab_size")) return 0;
  return json_integer<int>(meta, "vocab_size", path.string(), 1, 65536);
}

}  // namespace

TrainConfig resolve_for_estimate(TrainConfig config) {
  config.validate();
  config.resolve_auto_dtype();
  if (config.init_from == "resume") {
    ModelConfig saved = read_checkpoint_config(checkpoint_dir_of(config.out_dir));
    saved.take_dropout_from(config.model);
    config.model = saved;
  } else {
    CHECK(config.init_from == "scratch",
          "init_from = '{}': the estimator takes init_from='scratch' or 'resume'; for a weights "
          "file give its shape keys (n_layer, n_head, n_embd, block_size, vocab_size) instead",
          config.init_from);
    if (config.model.vocab_size == 0) {
      const int v = dataset_vocab_size(config.resolved_data_dir());
      config.model.vocab_size = v > 0 ? v : 50257;
    }
  }
  config.model.validate();
  return config;
}

double exact_training_flops(const ModelConfig& m, int64_t B, int64_t T) {
  const double C = m.n_embd, L = m.n_layer, Vp = m.padded_vocab_size();
  const double t = static_cast<double>(T);
  // Forward, per sequence: 24 C^2 per token per layer (qkv 6, proj 2, fc 8, fcproj 8), attention
  // 4 C per (query, key) pair with causal pairs T(T+1)/2, classifier 2 C Vp per token.
  const double forward = L * (24.0 * C * C * t + 4.0 * C * t * (t + 1) / 2) + 2.0 * C * Vp * t;
  return 3.0 * forward * static_cast<double>(B);  // backward = 2x forward
}

TrainingEstimate estimate_training(const TrainConfig& config, int world_size) {
  CHECK(world_size >= 1 && config.gradient_accumulation_steps % world_size == 0,
        "world_size = {}: gradient_accumulation_steps = {} must be a multiple of the number of "
        "ranks (each rank runs an equal share of the micro-batches)",
        world_size, config.gradient_accumulation_steps);
  TrainingEstimate e;
  e.world_size = world_size;
  e.zero_stage = static_cast<int>(config.zero_stage);
  e.local_accumulation = config.gradient_accumulation_steps / world_size;
  e.model = config.model;
  e.batch_size = config.batch_size;
  e.accumulation = config.gradient_accumulation_steps;
  e.dtype = config.dtype;
  e.optimizer = config.optim.optimizer;
  e.attention = config.attention;
  e.fused = config.fused;
  e.checkpointing = config.activation_checkpointing;
  e.recompute = static_cast<int>(config.recompute);
  const int64_t T = config.model.block_size;
  const int64_t N = config.batch_size * T;  // rows of one micro-batch
  e.tokens_per_iter = N * config.gradient_accumulation_steps;

  const ParamTable table(config.model);
  e.params = table.total_numel();
  e.params_for_mfu = table.num_params_for_mfu();
  e.flops_per_iter_nanogpt = flops_per_token(config.model, e.params_for_mfu) *
                             static_cast<double>(e.tokens_per_iter);
  e.flops_per_iter_exact = exact_training_flops(config.model, config.batch_size, T) *
                           static_cast<double>(config.gradient_accumulation_steps);
  if (config.optim.optimizer == "muon") {
    e.flops_per_iter_optimizer = muon_flops_per_step(table, config.optim.muon_ns_steps);
  }

  // What GPT, the optimizer, Activations and GradScratch allocate (all live during backward).
  DType dtype = DType::kF32;
  parse_dtype(config.dtype, dtype);  // (validated with the config)
  const int64_t param_bytes = buffer_bytes(table.total_numel());
  // ZeRO-1 (distributed/zero1.h): this rank's optimizer state and summed gradients cover its shard only;
  // in 16 bits its float32 master weights too (the trainer's shard_masters), the model keeping
  // float32 copies of the tensors its kernels read in float32 (GPT with MasterWeights::kOutside).
  const int64_t shard = zero1_shard_counts(table.total_numel(), world_size).front();
  const bool shard_masters = config.zero_stage == 1 && dtype != DType::kF32;
  if (shard_masters) {
    e.memory.push_back(
        {fmt::format("master weights (float32, shard of {})", world_size), buffer_bytes(shard)});
    e.memory.push_back({"float32-read weights (wte, wpe, LN, biases)",
                        buffer_bytes(table.fp32_read_numel())});
  } else {
    e.memory.push_back({"weights (float32)", param_bytes});
  }
  e.memory.push_back({"gradients (float32)", param_bytes});
  const int states = optimizer_state_tensor_count(config.optim);
  if (config.zero_stage == 1) {
    e.memory.push_back(
        {fmt::format("optimizer state ({}: {} x shard of {})", e.optimizer, states, world_size),
         states * buffer_bytes(shard)});
    e.memory.push_back({"ZeRO-1 gradient shard", buffer_bytes(shard)});
  } else {
    e.memory.push_back({fmt::format("optimizer state ({}: {} x params)", e.optimizer, states),
                        states * param_bytes});
  }
  if (config.optim.optimizer == "muon") {
    e.memory.push_back({config.zero_stage == 1
                            ? "Muon workspaces (+ whole-arena directions)"
                            : "Muon workspaces",
                        muon_workspace_bytes(table, dtype, config.zero_stage == 1,
                                             threads_per_rank(config.threads, world_size))});
  }
  if (dtype != DType::kF32) {  // GPT::set_dtype's 16-bit copy of the weights
    e.memory.push_back({fmt::format("weights copy ({})", dtype_name(dtype)),
                        (table.total_numel() * 2 + 63) / 64 * 64});
  }
  // fused=False runs the classifier over all N rows at once (GPT::forward's chunk choice).
  const ArenaLayout acts =
      activation_layout(config.model, N, config.fused ? 0 : N, dtype,
                        config.activation_checkpointing, static_cast<int>(config.recompute));
  int64_t listed = 0;
  for (const auto& [kind, bytes] : acts.by_kind) {
    e.memory.push_back({kind, bytes});
    listed += bytes;
  }
  if (acts.total_bytes > listed) e.memory.push_back({"arena rounding", acts.total_bytes - listed});
  if (config.attention == "naive") {
    e.memory.push_back({"attention probabilities (attention=naive, all layers)",
                        buffer_bytes(GPT::naive_attention_floats(config.model, config.batch_size,
                                                                 config.model.block_size))});
  }
  const ArenaLayout scratch = grad_scratch_layout(config.model, N, dtype);
  e.memory.push_back({"backward scratch (activation grads)", scratch.total_bytes});
  for (const MemoryLine& line : e.memory) e.peak_bytes += line.bytes;
  return e;
}

std::string format_estimate(const TrainingEstimate& e, double peak_flops,
                            const std::string& peak_name) {
  const ModelConfig& m = e.model;
  std::string out = fmt::format(
      "model: {} layers, {} heads, {} wide, context {}, vocab {} (padded {}), dropout {}\n"
      "parameters: {} ({:.2f}M; {:.2f}M without wpe)\n"
      "step: micro-batch {} x context {} x accumulation {} = {} tokens, dtype {}, optimizer {}, "
      "attention {}, fused {}{}, world size {} ({} micro-batches per rank), ZeRO stage {}\n"
      "FLOPs per iteration: {:.4g} (nanoGPT's 6N + 12LHQT), {:.4g} (exact matmul count){}\n\n"
      "peak memory per rank (tracked by the trainer):\n",
      m.n_layer, m.n_head, m.n_embd, m.block_size, m.vocab_size, m.padded_vocab_size(), m.dropout,
      e.params, static_cast<double>(e.params) / 1e6, static_cast<double>(e.params_for_mfu) / 1e6,
      e.batch_size, m.block_size, e.accumulation, e.tokens_per_iter, e.dtype, e.optimizer,
      e.attention, e.fused ? "True" : "False",
      e.checkpointing   ? ", activation checkpointing"
      : e.recompute < 2 ? fmt::format(", recompute {}", e.recompute)
                        : std::string(),
      e.world_size, e.local_accumulation, e.zero_stage, e.flops_per_iter_nanogpt,
      e.flops_per_iter_exact,
      e.flops_per_iter_optimizer > 0
          ? fmt::format(" + {:.4g} (Muon's Newton-Schulz)", e.flops_per_iter_optimizer)
          : std::string());
  for (const MemoryLine& line : e.memory) {
    if (line.bytes == 0) continue;
    out += fmt::format("  {:<46} {:>12}  {:5.1f}%\n", line.what, format_bytes(line.bytes),
                       100.0 * static_cast<double>(line.bytes) /
                           static_cast<double>(std::max<int64_t>(e.peak_bytes, 1)));
  }
  out += fmt::format("  {:<46} {:>12}  ({} bytes)\n", "total", format_bytes(e.peak_bytes),
                     e.peak_bytes);
  out +=
      "  (process RSS is higher: the binary, oneDNN's and OpenMP's buffers, the token files when "
      "preloaded, and allocator slack are not tracked)\n";
  if (peak_flops > 0) {
    const double ms =
        (e.flops_per_iter_exact + e.flops_per_iter_optimizer) / e.world_size / peak_flops * 1e3;
    out += fmt::format(
        "\ntime per iteration: at least {:.1f} ms (the exact FLOPs at 100% of the measured peak, "
        "{:.0f} GFLOP/s {}); at an MFU of x it takes {:.1f} ms / x\n",
        ms, peak_flops / 1e9, peak_name, ms);
  }
  return out;
}

}  // namespace nanogpt
