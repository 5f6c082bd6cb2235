#!/usr/bin/env bash
# W1 (nanoGPT's CPU recipe: char tinyshakespeare, 4 layers x 4 heads x 128, T 64, B 12) with two
# builds side by side, alternating rounds so that both see the same machine: median ms/iter and
# median MFU (nanoGPT's formula against the fp32 peak each run measures) of each run, then the
# median over rounds. For the small-model overhead work (fewer OpenMP regions per step).
# Usage: bash bench/run_w1_overhead.sh BEFORE_BINARY AFTER_BINARY [rounds=3] [iters=300]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/bench_data.sh
BEFORE=$(realpath "$1") AFTER=$(realpath "$2")
ROUNDS=${3:-3} ITERS=${4:-300} DTYPE=${DTYPE:-float32}  # env DTYPE: float32 (default) or bfloat16
WORK=build/bench_work; mkdir -p "$WORK"
prepare_tinyshakespeare build/nanogpt "$WORK" char
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
ROOT=$PWD
median() { sort -g | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]; else print "nan"}'; }
declare -A ms_of mfu_of
for r in $(seq 1 "$ROUNDS"); do
  for which in before after; do
    bin=$BEFORE; [ $which = after ] && bin=$AFTER
    out=out-w1-overhead-$which
    log=$(cd "$WORK" && "$bin" train "$ROOT/config/train_shakespeare_char_cpu.py" --dtype="$DTYPE" \
      --max_iters="$ITERS" --lr_decay_iters="$ITERS" --eval_interval=100000 --eval_iters=1 \
      --log_interval=10 --always_save_checkpoint=False --out_dir=$out 2>&1)
    ms=$(echo "$log" | sed -n 's/.*median \([0-9.]*\) ms per step.*/\1/p' | tail -1)
    peak=$(echo "$log" | sed -n 's/.*measured peak \([0-9.]*\) GFLOP\/s.*/\1/p' | tail -1)
    mfu=$(grep -o '"mfu":[-0-9.e]*' "$WORK/$out/metrics.jsonl" | cut -d: -f2 | median)
    echo "round $r $which: $ms ms/iter, MFU $(awk -v m="$mfu" 'BEGIN {printf "%.1f%%", 100*m}') (peak $peak GFLOP/s)"
    ms_of[$which]+="$ms "; mfu_of[$which]+="$mfu "
  done
done
for which in before after; do
  ms=$(echo ${ms_of[$which]} | tr ' ' '\n' | median)
  mfu=$(echo ${mfu_of[$which]} | tr ' ' '\n' | median)
  echo "$which: median $ms ms/iter, MFU $(awk -v m="$mfu" 'BEGIN {printf "%.1f%%", 100*m}')"
done
