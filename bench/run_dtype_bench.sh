#!/usr/bin/env bash
# float32 vs bfloat16 vs float16 side by side in one run, same build: ms/iter (median of the
# timed steps) and peak memory (tracked / RSS) of W2 (nanoGPT's baby GPT: 6x6x384, T 256, B 64,
# dropout 0.2, char tinyshakespeare) and W3' (GPT-2 124M shapes, B 4, T 1024). Prints each run's
# summary line; docs/benchmarks.md records them. Extra arguments go to every run (e.g.
# --profile=True). DTYPES picks the dtypes (default: all three).
# Usage: [DTYPES="float32 bfloat16"] bash bench/run_dtype_bench.sh [steps=4] [extra train args...]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/bench_data.sh
STEPS=${1:-4}
shift || true
WORK=build/bench_work; mkdir -p "$WORK"
ROOT=$PWD
NANOGPT=${NANOGPT:-$ROOT/build/nanogpt}
prepare_tinyshakespeare build/nanogpt "$WORK" char
prepare_tinyshakespeare build/nanogpt "$WORK" gpt2
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
common=(--max_iters="$STEPS" --eval_interval=100000 --eval_iters=1 --log_interval=1
        --always_save_checkpoint=False --gradient_accumulation_steps=1 "$@")
for dtype in ${DTYPES:-float32 bfloat16 float16}; do
  echo "W2 $dtype:"
  (cd "$WORK" && "$NANOGPT" train "$ROOT/config/train_shakespeare_char.py" \
     --dataset=shakespeare_char "${common[@]}" --dtype=$dtype --out_dir=out-dt-w2 |
     grep -E '^(done|iter|profile|matmul|attention|norm|elementwise|classifier|optimizer|other|total)')
done
for dtype in ${DTYPES:-float32 bfloat16 float16}; do
  echo "W3' $dtype:"
  (cd "$WORK" && "$NANOGPT" train "$ROOT/config/train_gpt2.py" --dataset=shakespeare_gpt2 \
     --batch_size=4 --block_size=1024 "${common[@]}" --dtype=$dtype --out_dir=out-dt-w3p |
     grep -E '^(done|iter|profile|matmul|attention|norm|elementwise|classifier|optimizer|other|total)')
done
