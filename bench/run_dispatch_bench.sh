#!/usr/bin/env bash
# Runtime dispatch side by side in one run (issue 18): the same portable binary at every CPU target
# this machine runs (NANOGPT_CPU_TARGET caps Highway's choice and oneDNN's ISA alike), and an older
# build (e.g. commit 35b4b12, before dispatch, built -march=native) as the "no slower than" bar.
#   W4   attention forward+backward (B 1, T 1024, 12 heads of 64; bench_kernels): float32 at every
#        target, and the native bf16 kernel where the target has it;
#   W1   nanoGPT's CPU recipe (4L/4H/128, T 64, B 12; 20 x STEPS steps);
#   W2   nanoGPT's baby GPT (6L/6H/384, T 256, B 64, dropout 0.2);
#   W3   GPT-2 124M shapes, B 4, T 64;   W3'  the same at T 1024;
# each in float32 and bfloat16, at the targets in TRAIN_LEVELS (default avx2, avx512, avx512_bf16:
# the baseline and SSE4 targets run W1 and W4 only, their W2/W3' steps take minutes), and in the old
# build. Every training run has --profile=True: the median step, the compute: line (target and
# peaks) and the per-op profile table go to $OUT (default build/bench_work/dispatch), one file per
# run, and a summary line per run to stdout.
# Usage: bash bench/run_dispatch_bench.sh [steps=3] [old build dir, e.g. /work/old35/build]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/bench_data.sh
STEPS=${1:-3}
OLD=${2:-}
ROOT=$PWD
WORK=build/bench_work; mkdir -p "$WORK"
OUT=${OUT:-$WORK/dispatch}; mkdir -p "$OUT"
TRAIN_LEVELS=${TRAIN_LEVELS:-"avx2 avx512 avx512_bf16"}
prepare_tinyshakespeare build/nanogpt "$WORK" char
prepare_tinyshakespeare build/nanogpt "$WORK" gpt2
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); vendor" \
     "$(grep -m1 'vendor_id' /proc/cpuinfo | cut -d: -f2 | xargs); features:" \
     "$(grep -o 'avx2\|avx512f\|avx512_bf16\|avx512_fp16\|amx_bf16' /proc/cpuinfo | sort -u | xargs)"
echo "build: $(build/nanogpt --version | sed -n 's/^build: *//p'); uncapped:" \
     "$(build/nanogpt --version | sed -n 's/^CPU target: *//p')"
levels="baseline sse4 avx2 avx512 avx512_bf16 avx512_spr"
runs_at() {  # runs_at <level>: this CPU runs that level itself (a cap above it would repeat one below)
  NANOGPT_CPU_TARGET=$1 build/nanogpt --version 2>/dev/null | grep -q "^CPU target: *$1 \["
}

echo "== W4 attention fwd+bwd (B 1, T 1024, 12 heads of 64): time, GFLOP/s"
w4() {  # w4 <label> <bench_kernels> <filter> [env...]
  local label=$1 bin=$2 filter=$3; shift 3
  local line
  line=$(env "$@" "$bin" --benchmark_filter="$filter" --benchmark_min_time=2 2>/dev/null |
         grep '^BM_' | awk '{print $2, $3, $(NF-1), $NF}')
  echo "  $label: $line"
}
for t in $levels; do
  runs_at "$t" || continue
  w4 "float32, $t" build/bench_kernels 'BM_AttentionW4/1024/0/' NANOGPT_CPU_TARGET=$t
  if [ "$t" = avx512_bf16 ] || [ "$t" = avx512_spr ]; then
    w4 "bf16 native, $t" build/bench_kernels 'BM_AttentionW4Bf16/1024/' NANOGPT_CPU_TARGET=$t
  fi
done
if [[ -n "$OLD" ]]; then
  w4 "float32, old build" "$OLD/bench_kernels" 'BM_AttentionW4/1024/0/'
  w4 "bf16 native, old build" "$OLD/bench_kernels" 'BM_AttentionW4Bf16/1024/'
fi

train() {  # train <workload> <label> <binary> <dtype> [env...]
  local w=$1 label=$2 bin=$3 dtype=$4; shift 4
  local args steps=$STEPS
  case $w in
    W1) args=("$ROOT/config/train_shakespeare_char_cpu.py"); steps=$((STEPS * 20)) ;;
    W2) args=("$ROOT/config/train_shakespeare_char.py" --gradient_accumulation_steps=1) ;;
    W3|W3p)
      local T=64; [ "$w" = W3p ] && T=1024
      args=("$ROOT/config/train_gpt2.py" --dataset=shakespeare_gpt2 --batch_size=4 --block_size=$T
            --gradient_accumulation_steps=1) ;;
  esac
  local log file="$OUT/$w-$dtype-$(echo "$label" | tr -c 'a-z0-9_' '-').log"
  log=$(cd "$WORK" && env "$@" "$bin" train "${args[@]}" --dtype="$dtype" --max_iters="$steps" \
        --eval_interval=100000 --eval_iters=1 --log_interval=1 --always_save_checkpoint=False \
        --profile=True --out_dir=out-dispatch 2>&1) || { echo "  $w $dtype $label: FAILED"; echo "$log" | tail -3; return 0; }
  echo "$log" | grep -E '^(compute:|done)|^profile|^[a-z]+ +[0-9.]+ +[0-9.]+%' > "$file" || true
  local ms mfu
  ms=$(echo "$log" | sed -n 's/.*median \([0-9.]*\) ms per step.*/\1/p' | tail -1)
  mfu=$(echo "$log" | sed -n 's/.*MFU is relative to the \(.*\) GFLOP\/s.*/\1 GFLOP\/s/p' | tail -1)
  echo "  $w $dtype $label: median ${ms} ms/step (MFU against: ${mfu:-?})"
}
for w in ${WORKLOADS:-W1 W2 W3 W3p}; do
  echo "== $w, $STEPS steps (W1: $((STEPS * 20)))"
  for dtype in float32 bfloat16; do
    for t in $levels; do
      runs_at "$t" || continue
      case " $TRAIN_LEVELS " in *" $t "*) ;; *) [ "$w" = W1 ] || continue ;; esac
      train $w "$t" "$ROOT/build/nanogpt" $dtype NANOGPT_CPU_TARGET=$t
    done
    [[ -n "$OLD" ]] && train $w "old build" "$OLD/nanogpt" $dtype
  done
done
echo "(per-run compute: lines and profiles in $OUT)"
