#!/usr/bin/env bash
# Seed 002's optimization journey, replayed on this CPU: W2 (nanoGPT's baby GPT, config/
# train_shakespeare_char.py: 6 layers, 6 heads, 384 wide, T 256, B 64, dropout 0.2, char
# tinyshakespeare) for a few iterations per row, the optimizations switched on one at a time:
#   naive baseline (attention=naive, fused=False, dtype=float32, data_mode=mmap) -> + preload
#   -> + fused kernels -> + flash attention -> + bf16 (dtype=bfloat16).
# Per row: median ms/iter, speed-up over the baseline, MFU (against the peak of the arithmetic the
# row's matmuls run in, as each run measures it: fp32 FMAs, or bf16 dot products for the bf16 row;
# core/cpu_info's probes, best value seen on this machine) and peak memory (tracked
# buffers / process RSS). Writes the table into docs/benchmarks.md between the journey markers
# and prints it.   Usage: bash bench/journey.sh [iters=5]   (NANOGPT=<binary> to use another build)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/bench_data.sh
ITERS=${1:-5}
ROOT=$PWD
NANOGPT=${NANOGPT:-$ROOT/build/nanogpt}
WORK=build/bench_work; mkdir -p "$WORK"
prepare_tinyshakespeare "$NANOGPT" "$WORK" char
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
common=(--dataset=shakespeare_char --max_iters="$ITERS" --eval_interval=100000 --eval_iters=1
        --log_interval=1 --always_save_checkpoint=False)

rows=()
base_ms=""
peak_gflops=""
bf16_peak_gflops=""
# run <label> <keys...>: one W2 training run; appends a markdown row to rows.
run() {
  local label=$1; shift
  local out="$WORK/journey-$(echo "$label" | tr -c 'a-z0-9' '-')"
  rm -rf "$out"
  local log rc=0
  log=$(cd "$WORK" && "$NANOGPT" train "$ROOT/config/train_shakespeare_char.py" "${common[@]}" \
          "$@" --out_dir="$ROOT/$out" 2>&1) || rc=$?
  local keys="$*"
  if [ $rc -ne 0 ]; then
    local why
    if echo "$log" | grep -q "dtype = 'bfloat16'"; then
      why="dtype=bfloat16 not available in this build"
    else
      why="failed: $(echo "$log" | grep -v '^\s*$' | tail -1)"
    fi
    rows+=("| $label | \`$keys\` | $why | | | |")
    echo "$label: $why" >&2
    return 0
  fi
  local ms mem peak mfu
  ms=$(echo "$log" | sed -n 's/.*median \([0-9.]*\) ms per step.*/\1/p' | tail -1)
  mem=$(echo "$log" | sed -n 's/.*peak memory \(.*\) tracked \/ \(.*\) RSS.*/\1 \/ \2/p' | tail -1)
  peak=$(echo "$log" | sed -n 's/.*measured peak \([0-9.]*\) GFLOP\/s.*/\1/p' | tail -1)
  local mfu_peak
  mfu_peak=$(echo "$log" | sed -n 's/.*MFU is relative to the \(.*\) peak \([0-9.]*\) GFLOP\/s.*/\1 \2/p' | tail -1)
  case "$mfu_peak" in "bf16 "*|"bfloat16 "*) bf16_peak_gflops=$mfu_peak ;; esac
  # median of the per-iteration MFU values in metrics.jsonl
  mfu=$(grep -o '"mfu":[-0-9.e]*' "$out/metrics.jsonl" | cut -d: -f2 | sort -g |
        awk '{v[NR]=$1} END {if (NR) printf "%.1f%%", 100*v[int((NR+1)/2)]; else print "n/a"}')
  [ -n "$base_ms" ] || base_ms=$ms
  [ -n "$peak_gflops" ] || peak_gflops=$peak
  local speedup
  speedup=$(awk -v b="$base_ms" -v m="$ms" 'BEGIN {printf "%.2fx", b/m}')
  rows+=("| $label | \`$keys\` | $ms | $speedup | $mfu | $mem |")
  echo "$label: $ms ms/iter, $speedup, MFU $mfu, peak memory $mem" >&2
}

run "naive baseline (mmap)" --attention=naive --fused=False --dtype=float32 --data_mode=mmap
run "+ RAM preload" --attention=naive --fused=False --dtype=float32 --data_mode=preload
run "+ fused kernels" --attention=naive --fused=True --dtype=float32 --data_mode=preload
run "+ flash attention" --attention=flash --fused=True --dtype=float32 --data_mode=preload
run "+ bf16" --attention=flash --fused=True --dtype=bfloat16 --data_mode=preload

table=$(
  echo "W2 (6x6x384, T 256, B 64, dropout 0.2), $ITERS iterations per row, OMP_NUM_THREADS=$OMP_NUM_THREADS;"
  echo "MFU against the peak of each row's matmul arithmetic, measured by the run: fp32 FMA ${peak_gflops:-?} GFLOP/s${bf16_peak_gflops:+, $bf16_peak_gflops GFLOP/s (the bf16 row)}; $(date -u +%Y-%m-%d), $(nproc) CPUs."
  echo
  echo "| step | keys | ms/iter (median) | speed-up | MFU | peak memory (tracked / RSS) |"
  echo "|---|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
)
echo "$table"
DOC=docs/benchmarks.md
if grep -q '<!-- journey:begin -->' "$DOC"; then
  awk -v t="$table" '
    /<!-- journey:begin -->/ {print; print t; skip=1; next}
    /<!-- journey:end -->/ {skip=0}
    !skip {print}' "$DOC" > "$DOC.tmp" && mv "$DOC.tmp" "$DOC"
  echo "(table written to $DOC)" >&2
fi
