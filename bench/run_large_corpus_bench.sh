#!/usr/bin/env bash
# Corpora larger than memory: data_mode=auto maps token files over 1 GiB, and a mapped corpus keeps
# RSS bounded. Sparse token files (every token 0; no disk space used, page-cache reads) of
# $BIG_GIB GiB (default 10) and 1 GiB; on each, a small model (2 x 64, B 64, T 256, no
# accumulation) trains STEPS steps (default 400): the big file with the default data_mode (auto ->
# mmap), the 1 GiB file with mmap and with preload in alternating rounds, side by side. Per run:
# the data: line's mode and reason, the median ms/step and the peak RSS of the log's done line.
#   Usage: bash bench/run_large_corpus_bench.sh [steps=400] [rounds=2]
set -euo pipefail
cd "$(dirname "$0")/.."
STEPS=${1:-400}
ROUNDS=${2:-2}
BIG_GIB=${BIG_GIB:-10}
NANOGPT=${NANOGPT:-$PWD/build/nanogpt}
WORK=build/bench_work/large_corpus
mkdir -p "$WORK/big" "$WORK/one"
for d in big one; do rm -f "$WORK/$d/train.bin" "$WORK/$d/val.bin"; done
truncate -s "${BIG_GIB}G" "$WORK/big/train.bin"
truncate -s 1G "$WORK/one/train.bin"
truncate -s 2M "$WORK/big/val.bin"
truncate -s 2M "$WORK/one/val.bin"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
keys=(--vocab_size=64 --batch_size=64 --block_size=256 --gradient_accumulation_steps=1
      --n_layer=2 --n_head=2 --n_embd=64 --max_iters="$STEPS" --lr_decay_iters="$STEPS"
      --warmup_iters=10 --eval_interval=100000 --eval_iters=1 --log_interval=100
      --always_save_checkpoint=False)
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-) ($(grep -o 'amx_bf16\|avx512_bf16' /proc/cpuinfo | sort -u | tr '\n' ' '))"
echo "| file | data_mode | chosen | median ms/step | peak RSS |"
echo "|---|---|---|---|---|"
run() {  # run <dir> <data_mode>
  local log
  log=$("$NANOGPT" train --data_dir="$WORK/$1" "${keys[@]}" --data_mode="$2" \
        --out_dir="$WORK/out_$1_$2" 2>&1) || { echo "$log" | tail -5; exit 1; }
  local chosen ms rss
  chosen=$(echo "$log" | sed -n 's/^data: .* val tokens, \(.*\), \(random\|sequential\)); .*/\1/p')
  ms=$(echo "$log" | sed -n 's/^done: .*median \([0-9.]*\) ms per step.*/\1/p')
  rss=$(echo "$log" | sed -n 's/^done: .* tracked \/ \(.*\) RSS$/\1/p')
  echo "| $1 ($(du -h --apparent-size "$WORK/$1/train.bin" | cut -f1)) | $2 | $chosen | $ms | $rss |"
}
run big auto
for ((r = 0; r < ROUNDS; ++r)); do
  run one mmap
  run one preload
done
rm -f "$WORK"/*/train.bin
