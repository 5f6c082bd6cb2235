#!/usr/bin/env bash
# Peak memory of the two memory-heavy workloads, a few training steps each (memory only; speed is
# bench/run_train_bench.sh's job): W2 (nanoGPT's baby GPT: 6x6x384, T 256, B 64, dropout 0.2,
# char tinyshakespeare) and W3' (GPT-2 124M shapes, B 4, T 1024, GPT-2 tinyshakespeare). Prints
# the final summary line of each run (tracked peak / process RSS); docs/benchmarks.md records them.
#   Usage: [DTYPES="float32 bfloat16 float16"] bash bench/run_memory_bench.sh [steps=2]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/bench_data.sh
STEPS=${1:-2}
WORK=build/bench_work; mkdir -p "$WORK"
ROOT=$PWD
NANOGPT=${NANOGPT:-$ROOT/build/nanogpt}  # another build to compare: NANOGPT=/path/to/nanogpt
prepare_tinyshakespeare build/nanogpt "$WORK" char
prepare_tinyshakespeare build/nanogpt "$WORK" gpt2
export OMP_NUM_THREADS=2
common=(--max_iters="$STEPS" --eval_interval=100000 --eval_iters=1 --log_interval=1
        --always_save_checkpoint=False --gradient_accumulation_steps=1)
for dtype in ${DTYPES:-float32}; do
  echo "W2 (6x6x384, T 256, B 64, dropout 0.2), $dtype:"
  (cd "$WORK" && "$NANOGPT" train "$ROOT/config/train_shakespeare_char.py" \
     --dataset=shakespeare_char "${common[@]}" --dtype="$dtype" --out_dir=out-mem-w2 | tail -1)
done
for dtype in ${DTYPES:-float32}; do
  echo "W3' (GPT-2 124M, T 1024, B 4), $dtype:"
  (cd "$WORK" && "$NANOGPT" train "$ROOT/config/train_gpt2.py" --dataset=shakespeare_gpt2 \
     --batch_size=4 --block_size=1024 "${common[@]}" --dtype="$dtype" --out_dir=out-mem-w3p | tail -1)
done
