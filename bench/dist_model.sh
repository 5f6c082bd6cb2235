#!/usr/bin/env bash
# On-paper scale-out model for data-parallel training (docs/benchmarks.md): per optimizer step,
# the gradient bytes a ring all-reduce moves per rank, and the step time on W machines for a given
# link speed, calibrated with a measured single-machine training throughput.
#   Usage: bash bench/dist_model.sh TOKENS_PER_S_124M TOKENS_PER_S_350M [NODE_SPEEDUP=1]
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
set -euo pipefail
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
