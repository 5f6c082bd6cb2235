#!/usr/bin/env bash
# W1 (nanoGPT's CPU recipe) with nanogpt and with the PyTorch peer under several OpenMP wait
# settings, alternating rounds so that all see the same machine. Each setting is a list of
# environment assignments ("default": none, i.e. libgomp's default: idle threads spin ~300K
# iterations before sleeping); OMP_WAIT_POLICY=PASSIVE is the other benches' setting (idle
# threads sleep at once, so each parallel region wakes them). Both programs get the same
# environment (the peer's intra-op OpenMP reads it; its OpenBLAS threads are not OpenMP's).
# Prints median ms/iter per program and setting, two threads.
# Usage: bash bench/run_w1_wait_policy.sh [NANOGPT=build/nanogpt] [rounds=2] [iters=300]
#          [settings='OMP_WAIT_POLICY=PASSIVE|default']   (settings separated by |)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/bench_data.sh
BIN=$(realpath "${1:-build/nanogpt}")
ROUNDS=${2:-2} ITERS=${3:-300}
IFS='|' read -r -a SETTINGS <<<"${4:-OMP_WAIT_POLICY=PASSIVE|default}"
WORK=build/bench_work; mkdir -p "$WORK"
prepare_tinyshakespeare build/nanogpt "$WORK" char
ROOT=$PWD
median() { sort -g | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]; else print "nan"}'; }
declare -A ms_of
for r in $(seq 1 "$ROUNDS"); do
  for setting in "${SETTINGS[@]}"; do
    envs=(env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT OMP_NUM_THREADS=2)
    [ "$setting" != default ] && read -r -a extra <<<"$setting" && envs+=("${extra[@]}")
    ours=$(cd "$WORK" && "${envs[@]}" "$BIN" train "$ROOT/config/train_shakespeare_char_cpu.py" --dtype=float32 \
      --max_iters="$ITERS" --lr_decay_iters="$ITERS" --eval_interval=100000 --eval_iters=1 \
      --log_interval=10 --always_save_checkpoint=False --out_dir=out-w1-policy 2>&1 |
      sed -n 's/.*median \([0-9.]*\) ms per step.*/\1/p' | tail -1)
    peer=$("${envs[@]}" OPENBLAS_CORETYPE=SkylakeX /usr/bin/python3 bench/torch/train_ref.py \
      --data_dir="$WORK/data/shakespeare_char" --max_iters="$ITERS" --lr_decay_iters="$ITERS" \
      --eval_iters=1 | grep -o '"median_ms": [0-9.]*' | cut -d' ' -f2)
    printf 'round %s [%s]: nanogpt %.1f ms/iter, peer %.1f ms/iter\n' "$r" "$setting" "$ours" "$peer"
    ms_of[ours-$setting]+="$ours " ms_of[peer-$setting]+="$peer "
  done
done
for setting in "${SETTINGS[@]}"; do
  ours=$(echo ${ms_of[ours-$setting]} | tr ' ' '\n' | median)
  peer=$(echo ${ms_of[peer-$setting]} | tr ' ' '\n' | median)
  awk -v s="$setting" -v a="$ours" -v b="$peer" \
    'BEGIN {printf "[%s]: nanogpt median %.1f ms/iter, peer median %.1f ms/iter, peer/nanogpt %.2fx\n", s, a, b, b / a}'
done
