#!/usr/bin/env bash
# The MLP fusion (--fused_mlp=True: bias + GELU in the fc matmul's epilogue, the GELU derivative in
# the epilogue of the backward matmul producing d(gelu)) and the two-pass optimizer step (part of
# --fused=True), side by side in one run: W2 (nanoGPT's baby GPT: 6x6x384, T 256, B 64, dropout
# 0.2) and W3 (GPT-2 124M shapes, B 4, T 64) in float32 and bfloat16, each with --fused=True,
# --fused=True --fused_mlp=True and --fused=False, in alternating rounds so that drift on a shared
# machine hits every variant alike. With BASE=<an older nanogpt binary>
# each config also runs that build with --fused=True (the fused path before this change).
# Per run: the median ms/step of the log's "done" line and the --profile rows (ms/step) of
# matmul, elementwise and optimizer.
#   Usage: bash bench/fusion_bench.sh [steps=4] [rounds=2] [workloads="W2 W3"] [dtypes="float32 bfloat16"]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/bench_data.sh
STEPS=${1:-4}
ROUNDS=${2:-2}
WORKLOADS=${3:-"W2 W3"}
DTYPES=${4:-"float32 bfloat16"}
ROOT=$PWD
NANOGPT=${NANOGPT:-$ROOT/build/nanogpt}
BASE=${BASE:-}
WORK=build/bench_work; mkdir -p "$WORK"
prepare_tinyshakespeare "$NANOGPT" "$WORK" char
prepare_tinyshakespeare "$NANOGPT" "$WORK" gpt2
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
common=(--max_iters="$STEPS" --eval_interval=100000 --eval_iters=1 --log_interval=1
        --always_save_checkpoint=False --gradient_accumulation_steps=1 --profile=True)

# one <label> <binary> <workload> <dtype> <fused> [more keys]: one run, one summary line.
one() {
  local label=$1 bin=$2 w=$3 dtype=$4 fused=$5 log
  shift 5
  local args=("${common[@]}" --dtype="$dtype" --fused="$fused" "$@" --out_dir=out-fusion-bench)
  if [ "$w" = W2 ]; then
    log=$(cd "$WORK" && "$bin" train "$ROOT/config/train_shakespeare_char.py" \
            --dataset=shakespeare_char "${args[@]}" 2>&1)
  else
    log=$(cd "$WORK" && "$bin" train "$ROOT/config/train_gpt2.py" --dataset=shakespeare_gpt2 \
            --batch_size=4 --block_size=64 "${args[@]}" 2>&1)
  fi
  local ms row
  ms=$(echo "$log" | sed -n 's/.*median \([0-9.]*\) ms per step.*/\1/p' | tail -1)
  row() { echo "$log" | awk -v k="$1" '$1 == k {print $2; exit}'; }
  echo "$w $dtype $label: median $ms ms/step; profile ms/step: matmul $(row matmul)," \
       "elementwise $(row elementwise), optimizer $(row optimizer)"
}

for w in $WORKLOADS; do
  for dtype in $DTYPES; do
    for r in $(seq "$ROUNDS"); do
      one "fused=True               " "$NANOGPT" "$w" "$dtype" True
      one "fused=True fused_mlp=True" "$NANOGPT" "$w" "$dtype" True --fused_mlp=True
      one "fused=False              " "$NANOGPT" "$w" "$dtype" False
      [ -z "$BASE" ] || one "base build, fused=True   " "$BASE" "$w" "$dtype" True
    done
  done
done
