#!/usr/bin/env bash
# The CPU speedrun's step (config/speedrun_shakespeare_char_cpu.py: 4x4x128 with the modern
# architecture, Muon, T 64, B 32, dtype auto) with two builds side by side, alternating rounds so
# that both see the same machine: each run's median ms/iter and its --profile rows (matmul,
# attention, optimizer, ...), in ms per step. The same iterations on both (no target: the run goes
# to max_iters). For changes to the speedrun's step, e.g. Muon's Newton-Schulz over threads.
# Usage: bash bench/run_speedrun_step.sh BEFORE_BINARY AFTER_BINARY [rounds=3] [iters=180]
#   env BEFORE_CONFIG / AFTER_CONFIG: another recipe file for either side (default: this checkout's
#   config/speedrun_shakespeare_char_cpu.py), e.g. the recipe of the older commit, whose binary does
#   not know the newer keys: git show <commit>:config/speedrun_shakespeare_char_cpu.py > old.py
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/bench_data.sh
BEFORE=$(realpath "$1") AFTER=$(realpath "$2")
ROUNDS=${3:-3} ITERS=${4:-180}
WORK=build/bench_work; mkdir -p "$WORK"
prepare_tinyshakespeare build/nanogpt "$WORK" char
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
ROOT=$PWD
BEFORE_CONFIG=$(realpath "${BEFORE_CONFIG:-config/speedrun_shakespeare_char_cpu.py}")
AFTER_CONFIG=$(realpath "${AFTER_CONFIG:-config/speedrun_shakespeare_char_cpu.py}")
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//');" \
  "$(grep -o 'amx_bf16\|avx512_bf16' /proc/cpuinfo | sort -u | tr '\n' ' ')"
for r in $(seq 1 "$ROUNDS"); do
  for which in before after; do
    bin=$BEFORE config=$BEFORE_CONFIG
    [ $which = after ] && bin=$AFTER config=$AFTER_CONFIG
    echo "== round $r, $which ($("$bin" --version | head -1))"
    (cd "$WORK" && "$bin" train "$config" \
       --dataset=shakespeare_char --max_iters="$ITERS" --lr_decay_iters="$ITERS" \
       --stop_at_target=False --target_loss=0 --profile=True --log_interval=1000 \
       --out_dir=out-speedrun-step-$which |
       grep -E '^(compute|done|profile|matmul|attention|norm|elementwise|classifier|optimizer|other|total)' | grep -v ' = ')
  done
done
