#!/usr/bin/env bash
# A run that moves between nanoGPT and nanogpt.cpp through ckpt.pt (issue 32): Karpathy's nanoGPT
# train.py (fetched public source, never committed; bench/nanogpt_py_src.sh) on Debian 13's PyTorch
# 2.6 (the root of bench/setup_torch2_root.sh, entered as bench/run_torch2_peer_bench.sh does)
# trains 50 iterations and saves out/ckpt.pt; we continue 50 more from that file
# (`nanogpt train --init_from=.../ckpt.pt`) and export ours (`export --format=nanogpt`); nanoGPT
# continues 50 more from ours (init_from='resume', torch.load with weights_only=True). Beside it,
# nanoGPT's own uninterrupted 150 iterations with SEEDS seeds (train.py's torch.manual_seed line
# made to read the seed from the environment) give the seed-to-seed spread. Prints each run's
# train-loss means over windows of 10 iterations and its evaluations, then the verdict: the
# round trip's evaluation at iteration 150 within the seeds' mean +- 3 standard deviations (or
# their range), and every train-loss window from 40 on within 3 sigma of the seeds' mean (sigma
# pooled from their own spread): a hand-over that broke something leaves that band by far. Also
# the same weights evaluated by both programs at each hand-over.
# Model (CPU-sized): n_layer 4, n_head 4, n_embd 128, block 64, batch 12, dropout 0, bias False,
# AdamW lr 1e-3 (warmup 10, cosine to 1e-4 at 150), float32, nanoGPT's char-level Shakespeare.
# Usage: bash bench/run_nanogpt_roundtrip_bench.sh   (SEEDS=3; needs root: chroot, mounts)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/nanogpt_py_src.sh
SEEDS=${SEEDS:-3}
ROOT=$PWD
NANOGPT=${NANOGPT:-$ROOT/build/nanogpt}
[ -x "$NANOGPT" ] || bash scripts/setup.sh >/dev/null
ROOTFS=$(bash bench/setup_torch2_root.sh | tail -1)
WORK=$ROOT/build/bench_work/roundtrip; rm -rf "$WORK"; mkdir -p "$WORK"
PY=$WORK/nanogpt_py
REV=$(prepare_nanogpt_py "$PY")
from="torch.manual_seed(1337 + seed_offset)"
grep -qF "$from" "$PY/train.py" || { echo "nanoGPT's train.py lacks '$from'" >&2; exit 1; }
sed -i "s/torch.manual_seed(1337 + seed_offset)/torch.manual_seed(int(os.environ.get('SEED', '1337')) + seed_offset)/" "$PY/train.py"
export OMP_NUM_THREADS=2

in_root() {  # in_root ENV... CMD...: in the Debian 13 root, in $PY, with a clean environment
  unshare --mount --propagation private -- /bin/sh -ec '
    r=$1 w=$2 py=$3; shift 3
    for d in dev proc sys; do mount --rbind "/$d" "$r/$d"; done
    mkdir -p "$r$w"; mount --bind "$w" "$r$w"
    exec chroot "$r" /usr/bin/env -i -C "$py" PATH=/usr/bin:/bin HOME=/root PYTHONUNBUFFERED=1 \
      OMP_NUM_THREADS=2 "$@"' sh "$ROOTFS" "$WORK" "$PY" "$@"
}

# nanoGPT's data by its own prepare.py; ours by `nanogpt prepare` from the same text (the same
# tokens: compared below), with the meta.json our loader reads.
cp ../shared/data/tinyshakespeare.txt "$PY/data/shakespeare_char/input.txt"
in_root python3 data/shakespeare_char/prepare.py >/dev/null
"$NANOGPT" prepare --tokenizer=char --input=../shared/data/tinyshakespeare.txt \
  --out_dir="$WORK/data/shakespeare_char" >/dev/null
for s in train val; do
  cmp -s "$PY/data/shakespeare_char/$s.bin" "$WORK/data/shakespeare_char/$s.bin" ||
    { echo "our $s.bin differs from nanoGPT's prepare.py's" >&2; exit 1; }
done
ARGS=(--dataset=shakespeare_char --n_layer=4 --n_head=4 --n_embd=128 --block_size=64
      --batch_size=12 --gradient_accumulation_steps=1 --dropout=0.0 --bias=False
      --learning_rate=1e-3 --min_lr=1e-4 --warmup_iters=10 --lr_decay_iters=150 --beta2=0.99
      --eval_interval=50 --eval_iters=20 --log_interval=1 --always_save_checkpoint=True
      --device=cpu --dtype=float32 --compile=False)
echo "# $(in_root python3 -c 'import torch; print("torch", torch.__version__)' 2>/dev/null), nanoGPT $REV; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); $(grep -o 'amx_bf16\|avx512_bf16' /proc/cpuinfo | sort -u | xargs)"

start=$SECONDS
for seed in $(seq 1337 $((1337 + SEEDS - 1))); do
  in_root SEED=$seed python3 train.py "${ARGS[@]}" --max_iters=150 --out_dir=out-straight-$seed \
    >"$WORK/straight_$seed.log" 2>&1
done
in_root python3 train.py "${ARGS[@]}" --max_iters=50 --out_dir=out-first >"$WORK/first.log" 2>&1
"$NANOGPT" train --init_from="$PY/out-first/ckpt.pt" --data_dir="$WORK/data/shakespeare_char" \
  --max_iters=100 --out_dir="$WORK/ours" >"$WORK/ours.log" 2>&1
mkdir -p "$PY/out-ours"
"$NANOGPT" export --format=nanogpt --out_dir="$WORK/ours" --output="$PY/out-ours/ckpt.pt" \
  >>"$WORK/ours.log" 2>&1
in_root python3 train.py "${ARGS[@]}" --init_from=resume --max_iters=150 --out_dir=out-ours \
  >"$WORK/last.log" 2>&1
grep -E "^(continuing|not carried|from .*saved config|wrote)" "$WORK/ours.log" | sed 's/^/# ours: /'
grep -h "^Overriding\|^num decayed\|Resuming" "$WORK/last.log" | head -3 | sed 's/^/# nanoGPT from ours: /'
echo "# took $((SECONDS - start)) s"
python3 bench/nanogpt_roundtrip_table.py "$WORK" "$SEEDS"
