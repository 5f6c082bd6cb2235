// TrainConfig validation: each message names the key, the value and what to change.
#include "train/train_config.h"

#include <fmt/format.h>

#include <cmath>

#include "core/check.h"
#include "core/cpu_info.h"
#include "kernels/dtype.h"

namespace nanogpt {

void TrainConfig::validate() const {
  CHECK(device == "cpu" || device == "cuda" || device == "cuda:0",
        "device = '{}': expected 'cpu' or 'cuda' (the first NVIDIA GPU; 'cuda:0' names it too)",
        device);
  CHECK(batch_size >= 1, "batch_size = {}: expected >= 1", batch_size);
  CHECK(gradient_accumulation_steps >= 1, "gradient_accumulation_steps = {}: expected >= 1",
        gradient_accumulation_steps);
  CHECK(max_iters >= 0, "max_iters = {}: expected >= 0", max_iters);
  CHECK(std::isfinite(max_wall_minutes) && max_wall_minutes >= 0,
        "max_wall_minutes = {}: expected a number of minutes >= 0 (0: no limit)", max_wall_minutes);
  CHECK(eval_interval >= 1, "eval_interval = {}: expected >= 1", eval_interval);
  CHECK(log_interval >= 1, "log_interval = {}: expected >= 1", log_interval);
  CHECK(eval_iters >= 1, "eval_iters = {}: expected >= 1", eval_iters);
  CHECK(std::isfinite(target_loss) && target_loss >= 0,
        "target_loss = {}: expected a finite loss >= 0 (0 turns time to target off; e.g. "
        "--target_loss=1.5)",
        target_loss);
  if (target_loss > 0) {
    CHECK(target_eval_interval >= 1,
          "target_eval_interval = {}: expected >= 1 iterations between full-validation "
          "evaluations when target_loss > 0 (e.g. --target_eval_interval=100)",
          target_eval_interval);
  }
  CHECK(target_eval_from >= 0, "target_eval_from = {}: expected >= 0 (an iteration)",
        target_eval_from);
  CHECK(!stop_at_target || target_loss > 0,
        "stop_at_target = True with target_loss = {}: there is no target to stop at; set "
        "--target_loss to the validation loss to reach (e.g. --target_loss=1.5) or drop "
        "stop_at_target",
        target_loss);
  CHECK(threads >= 0, "threads = {}: expected >= 0 (0 = all cores)", threads);
  CHECK(std::isfinite(ema_decay) && ema_decay >= 0 && ema_decay < 1,
        "ema_decay = {}: expected 0 (off) or a decay in (0, 1), e.g. --ema_decay=0.9", ema_decay);
  CHECK(ema_from >= 0, "ema_from = {}: expected an iteration >= 0", ema_from);
  CHECK(ema_decay == 0 || zero_stage == 0,
        "ema_decay = {} with zero_stage = 1: the weights' moving average is not kept with ZeRO-1 "
        "yet; use --zero_stage=0 or --ema_decay=0",
        ema_decay);
  CHECK(recompute >= 0 && recompute <= 2,
        "recompute = {}: expected 0 (keep each block's LayerNorm and GELU outputs: the fastest), 1 "
        "(recompute the GELU) or 2 (recompute both: the least memory)",
        recompute);
  CHECK(!activation_checkpointing || recompute == 2,
        "recompute = {} with activation_checkpointing = True: checkpointing recomputes whole "
        "blocks, so there is nothing for recompute to keep; set --recompute=2 or "
        "--activation_checkpointing=False",
        recompute);
  CHECK(data_mode == "auto" || data_mode == "preload" || data_mode == "mmap",
        "data_mode = '{}': expected 'auto', 'preload' or 'mmap'", data_mode);
  CHECK(sampling == "random" || sampling == "sequential",
        "sampling = '{}': expected 'random' or 'sequential'", sampling);
  DType parsed;
  CHECK(dtype == "auto" || parse_dtype(dtype, parsed),
        "dtype = '{}': expected 'auto' or {} (nanoGPT's names), e.g. --dtype=bfloat16", dtype,
        kDTypeNames);
  CHECK(zero_stage == 0 || zero_stage == 1,
        "zero_stage = {}: expected 0 (plain data-parallel) or 1 (ZeRO-1: sharded optimizer state)",
        zero_stage);
  CHECK(comm_timeout > 0, "comm_timeout = {}: expected seconds > 0", comm_timeout);
  CHECK(bucket_cap_mb > 0, "bucket_cap_mb = {}: expected megabytes > 0", bucket_cap_mb);
  CHECK(kernel_choice == "auto" || kernel_choice == "native" || kernel_choice == "widened" ||
            kernel_choice == "onednn",
        "kernel_choice = '{}': expected 'auto' (time each way at this run's shapes), 'native', "
        "'widened' or 'onednn'",
        kernel_choice);
  CHECK(attention == "flash" || attention == "naive",
        "attention = '{}': expected 'flash' (the default) or 'naive'", attention);
  CHECK(attention == "flash" || dtype == "float32" || dtype == "auto" || device != "cpu",
        "attention = '{}' with dtype = '{}': the naive attention runs in float32 only on the CPU; "
        "use --attention=flash for {}, or --dtype=float32",
        attention, dtype, dtype);
  CHECK(!out_dir.empty(), "out_dir is empty: give a directory such as --out_dir=out");
  ModelConfig shape = model;
  if (shape.vocab_size == 0) shape.vocab_size = 1;  // resolved later from the dataset
  shape.validate();
  optim.validate();
  CHECK(context_warmup_start >= 1 && context_warmup_start <= (int64_t{1} << 30),
        "context_warmup_start = {}: expected a context >= 1", context_warmup_start);
  context_schedule().validate();
}

std::string TrainConfig::resolve_auto_dtype() {
  if (dtype != "auto") return "";
  if (device != "cpu") {  // an NVIDIA GPU: bfloat16 on the tensor cores, as nanoGPT's train.py
    dtype = "bfloat16";
    return "dtype auto -> bfloat16 (--device=" + device + ": the GPU's bfloat16 tensor cores)";
  }
  AutoDtype choice = choose_auto_dtype();
  // The naive attention runs in float32 only: auto keeps such a run valid.
  if (attention == "naive" && choice.dtype != "float32") {
    choice = {"float32", "attention = 'naive' runs in float32 only"};
  }
  dtype = choice.dtype;
  return fmt::format("dtype auto -> {} ({})", dtype, choice.reason);
}

}  // namespace nanogpt
