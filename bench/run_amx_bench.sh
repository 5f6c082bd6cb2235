#!/usr/bin/env bash
# Issue 30's figures in one command, on an Intel Xeon with AMX or on any CPU (it says which):
#   1. the CPU (model; amx_bf16 / avx512_bf16 / avx512_fp16 flags) and the kernel ways a bfloat16
#      run chooses at W1, W2 and W3' (the compute: line of a one-step run: the ways' times here),
#      and the small float32 products' way (tiles or oneDNN) a float32 W1 run chooses;
#   2. W1, W2, W3' in float32 and bfloat16, side by side, ours (median ms per step; the ratio);
#   3. nanoGPT on PyTorch 2.6 for W1 and W2 in its best setting (bench/run_torch2_peer_bench.sh:
#      eager and compiled, fp32 and bf16), where its Debian 13 root can be made (root, network);
#   4. W4 attention forward + backward at T 1024-8192, float32 against bfloat16, through the op as
#      the model calls it; BM_AttentionW4Bf16 runs the way the planner chooses here (its label);
#   5. the bfloat16 profiles of W1, W2 and W3' (--profile=True: share, GFLOP/s or GB/s, % of peak;
#      per op class, then per op).
# Usage: bash bench/run_amx_bench.sh [steps=3] [parts="ways steps peer w4 profile"]
#   TORCH2=0 skips part 3's nanoGPT runs. Long: W3' fp32 steps take seconds each on 2 threads.
#   NANOGPT, BENCH_KERNELS (the binaries, default build/), BENCH_WORK (default build/bench_work) and
#   TEXT (the corpus) let scripts/gpu_check.sh run it from a carried bundle.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/bench_data.sh
source bench/peer_common.sh
STEPS=${1:-3}
PARTS=${2:-"ways steps peer w4 profile"}
ROOT=$PWD
NANOGPT=${NANOGPT:-$ROOT/build/nanogpt}
[ -x "$NANOGPT" ] || bash scripts/setup.sh >/dev/null
BENCH_KERNELS=${BENCH_KERNELS:-$ROOT/build/bench_kernels}
WORK=${BENCH_WORK:-$ROOT/build/bench_work}; mkdir -p "$WORK"
prepare_tinyshakespeare "$NANOGPT" "$WORK" char
prepare_tinyshakespeare "$NANOGPT" "$WORK" gpt2
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
flags=$(grep -o 'amx_bf16\|amx_tile\|avx512_bf16\|avx512_fp16' /proc/cpuinfo | sort -u | xargs)
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); flags: ${flags:-none of amx_bf16 avx512_bf16 avx512_fp16}; $OMP_NUM_THREADS threads; build $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
grep -q amx_bf16 <<<"$flags" ||
  echo "# this CPU has no AMX: oneDNN's bf16 products run on AVX512_BF16 / AVX-512 here; the same rows follow"

workload_args() {  # the train arguments of ours_workload's workloads (peer_common.sh)
  case $1 in
    W1) echo "$ROOT/config/train_shakespeare_char_cpu.py" ;;
    W2) echo "$ROOT/config/train_shakespeare_char.py --gradient_accumulation_steps=1" ;;
    W3p) echo "$ROOT/config/train_gpt2.py --dataset=shakespeare_gpt2 --batch_size=4 --block_size=1024 --gradient_accumulation_steps=1" ;;
  esac
}

for part in $PARTS; do
  case $part in
    ways)
      echo "## the kernel ways a bfloat16 run chooses here"
      for w in W1 W2 W3p; do
        # shellcheck disable=SC2046
        line=$(cd "$WORK" && "$NANOGPT" train $(workload_args $w) --dtype=bfloat16 --max_iters=1 \
                 --eval_interval=100000 --eval_iters=1 --always_save_checkpoint=False \
                 --out_dir=out-amx-ways | grep '^compute:')
        echo "$w: ${line##*; attention bf16: }"
      done
      echo "## the small float32 products' way a float32 run chooses here (tiles or oneDNN)"
      for w in W1; do
        # shellcheck disable=SC2046
        line=$(cd "$WORK" && "$NANOGPT" train $(workload_args $w) --dtype=float32 --max_iters=1 \
                 --eval_interval=100000 --eval_iters=1 --always_save_checkpoint=False \
                 --out_dir=out-amx-ways | grep '^compute:')
        echo "$w float32: small products f32: ${line##*; small products f32: }"
      done ;;
    steps)
      echo "## W1, W2, W3' float32 and bfloat16, ours (steps $STEPS; W1 x20)"
      for w in W1 W2 W3p; do
        f=$(ours_workload $w float32); b=$(ours_workload $w bfloat16)
        echo "$f"; echo "$b"
        fm=$(sed -E 's/.*median_ms=([0-9.]+).*/\1/' <<<"$f"); bm=$(sed -E 's/.*median_ms=([0-9.]+).*/\1/' <<<"$b")
        python3 -c "print('$w bf16 against fp32: %.2fx' % ($fm / $bm))"
      done ;;
    peer)
      if [ "${TORCH2:-1}" = 1 ] && [ "$(id -u)" -eq 0 ]; then
        echo "## nanoGPT on PyTorch 2.6, W1 and W2 (bench/run_torch2_peer_bench.sh $STEPS \"W1 W2\")"
        bash bench/run_torch2_peer_bench.sh "$STEPS" "W1 W2" ||
          echo "# the PyTorch 2.6 root could not be made or run here"
      else
        echo "## nanoGPT on PyTorch 2.6: skipped (TORCH2=0, or not root)"
      fi ;;
    w4)
      echo "## W4 attention fwd+bwd, float32 against bfloat16 (the way chosen here)"
      # (the way BM_AttentionW4Bf16 runs is its label, shown on a single run's line)
      "$BENCH_KERNELS" --benchmark_filter='BM_AttentionW4Bf16/1024' \
        --benchmark_min_time=0.01 2>/dev/null | grep '^BM_' | sed -E 's/.*(attention bf16: )/way at T 1024: \1/'
      "$BENCH_KERNELS" --benchmark_filter='BM_AttentionW4/[0-9]+/0/|BM_AttentionW4Bf16' \
        --benchmark_repetitions=3 --benchmark_report_aggregates_only=true 2>/dev/null |
        grep -E '_median' ;;
    profile)
      echo "## bfloat16 profiles (--profile=True)"
      for w in W1 W2 W3p; do
        echo "$w:"
        steps=$STEPS; [ $w = W1 ] && steps=$((STEPS * 20))
        # shellcheck disable=SC2046
        (cd "$WORK" && "$NANOGPT" train $(workload_args $w) --dtype=bfloat16 --max_iters=$steps \
           --eval_interval=100000 --eval_iters=1 --always_save_checkpoint=False --profile=True \
           --out_dir=out-amx-profile |
           grep -E '^(profile|matmul|attention|norm|elementwise|classifier|optimizer|other|total|op \(class\)|[a-z_0-9]+ \()' |
           grep -v ' = ')
      done ;;
    *) echo "unknown part '$part' (ways steps peer w4 profile)" >&2; exit 2 ;;
  esac
done
