#!/usr/bin/env bash
# nanogpt.cpp against the PyTorch peer (Debian's torch 1.13, bench/torch/train_ref.py: the nanoGPT
# model and loop) on issue 7's workloads, side by side in one run, float32 and bfloat16 (ours:
# --dtype=bfloat16; the peer: torch.autocast bf16, as nanoGPT runs on CPU):
#   W1  nanoGPT's CPU recipe: 4L/4H/128, T 64, B 12, char tinyshakespeare
#   W2  nanoGPT's baby GPT: 6L/6H/384, T 256, B 64, dropout 0.2, char tinyshakespeare
#   W3  GPT-2 124M shapes, B 4, T 64          W3' GPT-2 124M shapes, B 4, T 1024
# Each run times STEPS training steps (W1: 20 x STEPS; no evaluation) and reports the median step; the peer runs
# on synthetic tokens for the GPT-2 shapes (speed only). Prints one line per run:
#   <workload> <dtype> <ours|peer> median_ms=<..> peak_rss_mib=<..>
# Usage: bash bench/run_peer_bench.sh [steps=3] [workloads="W1 W2 W3 W3p"]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/bench_data.sh
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

steps_of() {  # W1's steps take milliseconds: time 20x as many of them
  if [ "$1" = W1 ]; then echo $((STEPS * 20)); else echo "$STEPS"; fi
}

ours() {  # ours <label> <dtype> <train args...>
  local label=$1 dtype=$2; shift 2
  local line
  line=$(cd "$WORK" && "$NANOGPT" train "$@" --dtype="$dtype" --max_iters="$(steps_of "$label")" \
           --eval_interval=100000 --eval_iters=1 --log_interval=1 --always_save_checkpoint=False \
           --out_dir=out-peer-bench | grep '^done:')
  # done: ... median X ms per step ... peak memory A tracked / B RSS
  local ms rss
  ms=$(sed -E 's/.*median ([0-9.]+) ms per step.*/\1/' <<<"$line")
  rss=$(sed -E 's/.* \/ ([0-9.]+ [KMG]iB) RSS.*/\1/' <<<"$line")
  echo "$label $dtype ours median_ms=$ms peak_rss=$rss"
}

peer() {  # peer <label> <dtype> <train_ref args...>
  local label=$1 dtype=$2; shift 2
  OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 bench/torch/train_ref.py "$@" --dtype="$dtype" --max_iters="$(steps_of "$label")" \
    --warmup_iters=1 --lr_decay_iters=100 |
    /usr/bin/python3 -c "import json,sys; r=json.load(sys.stdin); print('$label $dtype peer median_ms=%.1f peak_rss=%.2f GiB' % (r['median_ms'], r['peak_rss_bytes']/2**30))"
}

CHAR=$ROOT/$WORK/data/shakespeare_char
for w in $WORKLOADS; do
  for dtype in float32 bfloat16; do
    case $w in
      W1)
        ours W1 $dtype "$ROOT/config/train_shakespeare_char_cpu.py"
        peer W1 $dtype --data_dir="$CHAR" --eval_iters=1 ;;
      W2)
        ours W2 $dtype "$ROOT/config/train_shakespeare_char.py" --gradient_accumulation_steps=1
        peer W2 $dtype --data_dir="$CHAR" --eval_iters=1 --batch_size=64 --block_size=256 \
          --n_layer=6 --n_head=6 --n_embd=384 --dropout=0.2 ;;
      W3|W3p)
        T=64; [ $w = W3p ] && T=1024
        ours $w $dtype "$ROOT/config/train_gpt2.py" --dataset=shakespeare_gpt2 --batch_size=4 \
          --block_size=$T --gradient_accumulation_steps=1
        peer $w $dtype --batch_size=4 --block_size=$T --n_layer=12 --n_head=12 --n_embd=768 \
          --vocab_size=50304 ;;
      *) echo "unknown workload $w (W1 W2 W3 W3p)" >&2; exit 2 ;;
    esac
  done
done
