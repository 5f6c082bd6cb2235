#!/usr/bin/env bash
# Side by side in one run: the nanoGPT CPU recipe (W1: char tinyshakespeare, 4x4x128, T 64, B 12,
# 2000 iterations) with nanogpt.cpp and with the PyTorch peer (bench/torch/train_ref.py, tuned env),
# then GPT-2 124M shapes (W3: B 4, T 64) ms/iter for both. Prints JSON lines; docs/benchmarks.md
# records them.   Usage: bash bench/run_train_bench.sh [iters=2000]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/bench_data.sh
ITERS=${1:-2000}
bash bench/setup_peers.sh >/dev/null
WORK=build/bench_work; mkdir -p "$WORK"
prepare_tinyshakespeare build/nanogpt "$WORK" char
# Each program under its own recommended OpenMP setting: the peer with OMP_WAIT_POLICY=PASSIVE (any
# spinning makes it 2-6x slower here), ours with libgomp's default (idle threads spin briefly before
# sleeping), what a user gets who sets nothing (bench/run_w1_wait_policy.sh measures both ways).
export OMP_NUM_THREADS=2
ROOT=$PWD
(cd "$WORK" && "$ROOT/build/nanogpt" train "$ROOT/config/train_shakespeare_char_cpu.py" --dtype=float32 \
   --max_iters="$ITERS" --lr_decay_iters="$ITERS" --eval_interval="$ITERS" --log_interval=100 \
   --out_dir=out-w1 | tail -2)
OMP_WAIT_POLICY=PASSIVE OPENBLAS_CORETYPE=SkylakeX /usr/bin/python3 bench/torch/train_ref.py \
  --data_dir="$WORK/data/shakespeare_char" --max_iters="$ITERS" --lr_decay_iters="$ITERS"
# W3: GPT-2 124M shapes, B 4, T 64, a few steps on tinyshakespeare GPT-2 tokens (speed only).
prepare_tinyshakespeare build/nanogpt "$WORK" gpt2
(cd "$WORK" && "$ROOT/build/nanogpt" train "$ROOT/config/train_gpt2.py" --dtype=float32 --dataset=shakespeare_gpt2 \
   --batch_size=4 --block_size=64 --gradient_accumulation_steps=1 --max_iters=8 \
   --eval_interval=1000 --eval_iters=1 --log_interval=1 --always_save_checkpoint=False \
   --out_dir=out-w3 | tail -1)
OMP_WAIT_POLICY=PASSIVE OPENBLAS_CORETYPE=SkylakeX /usr/bin/python3 bench/torch/train_ref.py --batch_size=4 --block_size=64 \
  --n_layer=12 --n_head=12 --n_embd=768 --vocab_size=50304 --max_iters=8
