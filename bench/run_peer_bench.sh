#!/usr/bin/env bash
# nanogpt.cpp against the PyTorch peer (Debian's torch 1.13, bench/torch/train_ref.py: the nanoGPT
# model and loop) on issue 7's workloads, side by side in one run, float32 and bfloat16 (ours:
# --dtype=bfloat16; the peer: torch.autocast bf16, as nanoGPT runs on CPU):
# W1 W2 W3 W3' (bench/peer_common.sh lists them, and runs ours on them).
# Each run times STEPS training steps (W1: 20 x STEPS; no evaluation) and reports the median step; the peer runs
# on synthetic tokens for the GPT-2 shapes (speed only). Prints one line per run:
#   <workload> <dtype> <ours|peer> median_ms=<..> peak_rss_mib=<..>
# Usage: bash bench/run_peer_bench.sh [steps=3] [workloads="W1 W2 W3 W3p"]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/bench_data.sh
source bench/peer_common.sh
STEPS=${1:-3}
WORKLOADS=${2:-"W1 W2 W3 W3p"}
bash bench/setup_peers.sh >/dev/null
WORK=build/bench_work; mkdir -p "$WORK"
ROOT=$PWD
NANOGPT=${NANOGPT:-$ROOT/build/nanogpt}
prepare_tinyshakespeare "$NANOGPT" "$WORK" char
prepare_tinyshakespeare "$NANOGPT" "$WORK" gpt2
# Each program under its own recommended OpenMP setting: the peer with OMP_WAIT_POLICY=PASSIVE (any
# spinning makes it 2-6x slower here: its OpenMP threads spin on the cores its OpenBLAS threads
# need), ours with libgomp's default (idle threads spin briefly before sleeping), what a user gets
# who sets nothing (bench/run_w1_wait_policy.sh measures both programs under both settings).
export OMP_NUM_THREADS=2 OPENBLAS_CORETYPE=SkylakeX

peer() {  # peer <label> <dtype> <train_ref args...>
  local label=$1 dtype=$2; shift 2
  OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 bench/torch/train_ref.py "$@" --dtype="$dtype" --max_iters="$(steps_of "$label")" \
    --warmup_iters=1 --lr_decay_iters=100 |
    /usr/bin/python3 -c "import json,sys; r=json.load(sys.stdin); print('$label $dtype peer median_ms=%.1f peak_rss=%.2f GiB' % (r['median_ms'], r['peak_rss_bytes']/2**30))"
}

CHAR=$ROOT/$WORK/data/shakespeare_char
for w in $WORKLOADS; do
  for dtype in float32 bfloat16; do
    ours_workload "$w" $dtype
    case $w in
      W1)
        peer W1 $dtype --data_dir="$CHAR" --eval_iters=1 ;;
      W2)
        peer W2 $dtype --data_dir="$CHAR" --eval_iters=1 --batch_size=64 --block_size=256 \
          --n_layer=6 --n_head=6 --n_embd=384 --dropout=0.2 ;;
      W3|W3p)
        T=64; [ $w = W3p ] && T=1024
        peer $w $dtype --batch_size=4 --block_size=$T --n_layer=12 --n_head=12 --n_embd=768 \
          --vocab_size=50304 ;;
      *) echo "unknown workload $w (W1 W2 W3 W3p)" >&2; exit 2 ;;
    esac
  done
done
