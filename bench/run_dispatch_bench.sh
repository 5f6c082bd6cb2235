#!/usr/bin/env bash
# Runtime dispatch side by side in one run (issue 18): the same binary at every CPU target this
# machine runs (NANOGPT_CPU_TARGET caps Highway's choice and oneDNN's ISA), and an older build
# (e.g. commit 35b4b12, before dispatch) as the "no slower than" bar.
#   1. W4 attention forward+backward (B 4, T 1024, GPT-2 heads; bench_kernels), per target;
#   2. W2 training steps (nanoGPT's baby GPT, fp32, and bf16 where the level has it), per target:
#      the summary line (median ms/iter) and the compute: line (the target and its measured peak).
# Prints the CPU (model and the features that matter) first. Kernels not yet dispatched run at the
# build's -march whatever the cap (docs/architecture.md), so a capped step is an upper bound on
# what that CPU level would give.
# Usage: bash bench/run_dispatch_bench.sh [steps=5] [old build dir, e.g. /work/old35/build]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/bench_data.sh
STEPS=${1:-5}
OLD=${2:-}
ROOT=$PWD
WORK=build/bench_work; mkdir -p "$WORK"
prepare_tinyshakespeare build/nanogpt "$WORK" char
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs);" \
     "features: $(grep -o 'avx2\|avx512f\|avx512_bf16\|avx512_fp16\|amx_bf16' /proc/cpuinfo | sort -u | xargs)"
targets=$(build/nanogpt --version | sed -n 's/^CPU target: *\([a-z0-9_]*\) .*/\1/p')
echo "uncapped target: $targets"
levels="baseline sse4 avx2 avx512 avx512_bf16 avx512_spr"
echo "== W4 attention fwd+bwd (B 4, T 1024, 12 heads of 64), ms (lower is better)"
runs_at() {  # runs_at <level>: this CPU runs that level itself (a cap above it would repeat one below)
  NANOGPT_CPU_TARGET=$1 build/nanogpt --version 2>/dev/null | grep -q "^CPU target: *$1 \["
}
for t in $levels; do
  runs_at "$t" || continue
  line=$(NANOGPT_CPU_TARGET=$t build/bench_kernels --benchmark_filter='BM_AttentionForwardBackward/4/1024/0' \
         --benchmark_min_time=2 2>/dev/null | grep '^BM_')
  echo "  this build, $t: $(NANOGPT_CPU_TARGET=$t build/nanogpt --version | sed -n 's/^CPU target: *//p' | cut -d'(' -f1)-> $line"
done
if [[ -n "$OLD" ]]; then
  echo "  old build $OLD: $("$OLD/bench_kernels" --benchmark_filter='BM_AttentionForwardBackward/4/1024/0' \
       --benchmark_min_time=2 2>/dev/null | grep '^BM_')"
fi
common=(--dataset=shakespeare_char --max_iters="$STEPS" --eval_interval=100000 --eval_iters=1
        --log_interval=1 --always_save_checkpoint=False --gradient_accumulation_steps=1)
w2() {  # w2 <label> <binary> <dtype> [env...]
  local label=$1 bin=$2 dtype=$3; shift 3
  local log
  log=$(cd "$WORK" && env "$@" "$bin" train "$ROOT/config/train_shakespeare_char.py" "${common[@]}" \
        --dtype="$dtype" --out_dir=out-dispatch 2>&1)
  echo "  $label, $dtype: $(echo "$log" | grep -E '^done' | head -1)"
  echo "    $(echo "$log" | grep -oE 'kernels for [a-z0-9_]+ \[Highway [A-Z0-9_]+\]|measured peak [0-9]+ GFLOP/s fp32 FMA' | xargs)"
}
echo "== W2 (6x6x384, T 256, B 64), $STEPS steps"
for t in $levels; do
  runs_at "$t" || continue
  w2 "this build, $t" "$ROOT/build/nanogpt" float32 NANOGPT_CPU_TARGET=$t
done
[[ -n "$OLD" ]] && w2 "old build" "$OLD/nanogpt" float32
w2 "this build, uncapped" "$ROOT/build/nanogpt" bfloat16
[[ -n "$OLD" ]] && w2 "old build" "$OLD/nanogpt" bfloat16
true
