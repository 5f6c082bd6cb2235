#!/usr/bin/env bash
# On-paper scale-out model for data-parallel training (docs/benchmarks.md): per optimizer step,
# the gradient bytes a ring all-reduce moves per rank, and the step time on W machines for a given
# link speed, calibrated with a measured single-machine training throughput.
#   Usage: bash bench/dist_model.sh TOKENS_PER_S_124M TOKENS_PER_S_350M [NODE_SPEEDUP=1]
#          bash bench/dist_model.sh --gpu [STEP_MS] [STEP_TOKENS] [OVERLAPS] [GPUS]  (below)
# TOKENS_PER_S_*: training tokens/s of one machine (measured here with `nanogpt train`);
# NODE_SPEEDUP multiplies it (e.g. 32 for a node with 32x this machine's FLOP/s).
# Model (per step, 491,520 tokens = nanoGPT's GPT-2 recipe, micro-batch 12 x 1024 tokens):
#   compute   Tc = 491520 / W / tok_s
#   all-reduce (ring, fp32 gradients of N parameters): every rank sends and receives
#             2 (W-1)/W * 4N bytes: Ta = 2 (W-1) * alpha + 2 (W-1)/W * 4N / link, alpha = 20 us
#   overlap   the buckets of ln_f and the blocks start during the last micro-batch's backward
#             (about 2/3 of its compute); wte (the tied classifier/embedding, finished last by the
#             encoder backward) cannot overlap: exposed = Ta*f_wte + max(0, Ta*(1-f_wte) - Tbwd)
#   step      Tc + exposed
#   ZeRO-1    reduce-scatter + all-gather move the same bytes as the all-reduce; per-rank memory
#             of the AdamW state drops from 8N to 8N/W bytes (params 4N and grads 4N stay).
# GPU mode (a model, not a measurement):
#   bash bench/dist_model.sh --gpu [STEP_MS=32.9] [STEP_TOKENS=16384] [OVERLAPS="0 0.8"] [GPUS=8]
# STEP_MS: a measured one-GPU training step of GPT-2 124M over STEP_TOKENS tokens (default: B16
# T1024 bfloat16 on one H200, 32.9 ms, measured with the GPU's own loop before the one trainer
# replaced it; the one trainer's step has not been measured on a GPU yet: pass the figure of
# `bash scripts/gpu_check.sh run`'s GPT-2 row once it has), taken as the GPU's tokens/s at any
# micro-batch. Per
# step of seed 003's batch, nanoGPT's train_gpt2.py (12 x 1024 tokens x 40 micro-batches =
# 491,520 tokens, 5 micro-batches on each of 8 GPUs):
#   compute   Tc = 491520 / GPUS / tok_s
#   all-reduce, NCCL ring: T = 2 (N-1)/N * bytes / busbw, gradients once per step (after the last
#             micro-batch), float32 (the one model's gradients on a GPU: 4 bytes a
#             parameter) and bfloat16 (2 bytes) for comparison; the latency term (~tens of us)
#             is left out at these sizes. busbw as NCCL's tests define it (nccl-tests
#             doc/PERFORMANCE.md: busbw = algbw x 2(n-1)/n for all_reduce, so that it compares
#             with the hardware's link speed): NVLink 4 on 8 x H100 SXM (NVIDIA's H100
#             datasheet: 900 GB/s bidirectional per GPU, 450 GB/s a direction; all_reduce
#             measurements commonly show 360-480 GB/s busbw), PCIe Gen4 x16 (~20-25 GB/s
#             achieved of 32) and Gen5 x16 (~40-50 of 64).
#   overlap   a fraction OV of the all-reduce hides behind the last backward: exposed = T (1-OV)
#   step      Tc + exposed; scaling efficiency = Tc / step (perfect: the one-GPU step / N)
set -euo pipefail
if [ "${1:-}" = "--gpu" ]; then
  STEP_MS=${2:-32.9}
  STEP_TOKENS=${3:-16384}
  OVERLAPS=${4:-0 0.8}
  GPUS=${5:-8}
  awk -v ms="$STEP_MS" -v st="$STEP_TOKENS" -v ovs="$OVERLAPS" -v W="$GPUS" 'BEGIN {
    n = 124.48e6; step_tokens = 491520
    tok = st / (ms / 1e3); tc = step_tokens / W / tok; t1 = step_tokens / tok
    printf "MODEL, NOT A MEASUREMENT: GPT-2 124M (%.2fM parameters), %d tokens a step, %d GPUs\n",
           n / 1e6, step_tokens, W
    printf "one GPU: %.1f ms for %d tokens = %.0f tokens/s -> the whole step on one GPU %.3f s,\n",
           ms, st, tok, t1
    printf "compute per GPU of %d (%d tokens) %.1f ms\n\n", W, step_tokens / W, tc * 1e3
    split("NVLink4-360 NVLink4-480 PCIe4-22 PCIe5-45", links, " ")
    split("360 480 22 45", bw, " ")
    split("4 2", bytes_per, " ")
    nov = split(ovs, ov, " ")
    printf "%-12s %-6s %9s %8s %9s %8s %9s\n", "link", "grads", "busbw", "a-r ms", "overlap",
           "step ms", "scaling"
    for (l = 1; l <= 4; ++l) {
      for (g = 1; g <= 2; ++g) {
        bytes = bytes_per[g] * n
        ta = 2 * (W - 1) / W * bytes / (bw[l] * 1e9)
        for (o = 1; o <= nov; ++o) {
          exposed = ta * (1 - ov[o]); step = tc + exposed
          printf "%-12s %-6s %6d GB/s %8.1f %9.1f %8.1f %8.1f%%\n", links[l],
                 (g == 1 ? "fp32" : "bf16"), bw[l], ta * 1e3, ov[o], step * 1e3, 100 * tc / step
        }
      }
    }
    printf "\nbeside it: llm.c, GPT-2 124M on 8 x H100, ~140 ms a step (as quoted in our issue; not\n"
    printf "measured here). This table is arithmetic over one measured one-GPU step, not a run on %d GPUs.\n", W
  }'
  exit 0
fi
TOK124=${1:?tokens/s of GPT-2 124M on one machine}
TOK350=${2:?tokens/s of GPT-2 350M on one machine}
SPEEDUP=${3:-1}
awk -v t124="$TOK124" -v t350="$TOK350" -v sp="$SPEEDUP" 'BEGIN {
  # parameters (fp32 arena incl. wpe and the padded vocabulary 50304) and the wte share
  split("124M 350M", names, " ")
  N["124M"] = 124.48e6; wte["124M"] = 50304 * 768;  tok["124M"] = t124 * sp
  N["350M"] = 354.87e6; wte["350M"] = 50304 * 1024; tok["350M"] = t350 * sp
  step_tokens = 491520; micro_tokens = 12 * 1024; alpha = 20e-6
  for (m = 1; m <= 2; ++m) {
    name = names[m]; n = N[name]; fw = wte[name] / n
    printf "GPT-2 %s: %.0f MB of fp32 gradients; AdamW state %.0f MB per rank without ZeRO-1\n",
           name, 4 * n / 1e6, 8 * n / 1e6
    printf "%-4s %14s %12s", "W", "bytes/rank", "compute s"
    for (g = 1; g <= 3; ++g) printf " %22s", (g == 1 ? "10" : (g == 2 ? "25" : "100")) " Gbit/s: step s (exp.)"
    printf " %14s\n", "ZeRO-1 opt MB"
    split("2 4 8 16 32 64", Ws, " ")
    for (i = 1; i <= 6; ++i) {
      W = Ws[i]; bytes = 2 * (W - 1) / W * 4 * n
      tc = step_tokens / W / tok[name]; tbwd = micro_tokens / tok[name] * 2 / 3
      printf "%-4d %11.0f MB %12.2f", W, bytes / 1e6, tc
      split("10 25 100", gb, " ")
      for (g = 1; g <= 3; ++g) {
        link = gb[g] * 1e9 / 8
        ta = 2 * (W - 1) * alpha + bytes / link
        exposed = ta * fw + ((ta * (1 - fw) - tbwd) > 0 ? ta * (1 - fw) - tbwd : 0)
        printf " %14.2f (%5.2f)", tc + exposed, exposed
      }
      printf " %14.0f\n", 8 * n / W / 1e6
    }
    printf "\n"
  }
}'
