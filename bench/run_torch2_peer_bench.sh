#!/usr/bin/env bash
# nanogpt.cpp against the PyTorch users actually run (issue 18 item 7): Karpathy's nanoGPT train.py
# (fetched public source, not committed; bench/nanogpt_py_src.sh) on Debian 13's python3-torch 2.6
# (oneDNN 3.7, SDPA, torch.compile), in a Debian 13 root made by bench/setup_torch2_root.sh and
# entered with chroot in a private mount namespace (/dev, /proc, /sys and the bench work folder bound
# in; the mounts vanish with the namespace). Side by side in one run, per workload of
# bench/peer_common.sh: ours float32 and bfloat16, then train.py eager fp32, eager bf16 autocast,
# compile=True fp32, compile=True bf16 (nanoGPT's dtype on CPU takes effect through the copy's
# one-line autocast change). No evaluation past nanoGPT's step-0 estimate_loss (eval_iters=1).
# Steps: ours STEPS (W1: 20 x STEPS, as bench/run_peer_bench.sh); train.py runs WARMUP + that many
# iterations and drops the first WARMUP (step-0 evaluation, compilation, first optimizer step).
# One line per run; peak RSS is the largest process's (/usr/bin/time's maximum resident set):
#   <workload> <dtype> <ours|torch-eager|torch-compile> median_ms=<..> peak_rss=<..> [warmup_s=<..>]
# Usage: bash bench/run_torch2_peer_bench.sh [steps=3] [workloads="W1 W2 W3 W3p"]
#   SETTINGS="eager:float32 eager:bfloat16 compile:float32 compile:bfloat16" (which train.py runs),
#   OURS=0 (skip ours), WARMUP=2, TORCH2_ENV (the peer's thread settings), NANOGPT (our binary),
#   NANOGPT_PY_SRC (a nanoGPT checkout), TORCH2_ROOT (the Debian 13 root). Needs root (chroot, mounts).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/bench_data.sh
source bench/peer_common.sh
source bench/nanogpt_py_src.sh
STEPS=${1:-3}
WORKLOADS=${2:-"W1 W2 W3 W3p"}
SETTINGS=${SETTINGS:-"eager:float32 eager:bfloat16 compile:float32 compile:bfloat16"}
WARMUP=${WARMUP:-2}
OURS=${OURS:-1}
ROOT=$PWD
NANOGPT=${NANOGPT:-$ROOT/build/nanogpt}
[ -x "$NANOGPT" ] || bash scripts/setup.sh >/dev/null
ROOTFS=$(bash bench/setup_torch2_root.sh | tail -1)
WORK=$ROOT/build/bench_work; mkdir -p "$WORK"
PY=$WORK/nanogpt_py
REV=$(prepare_nanogpt_py "$PY")
prepare_tinyshakespeare "$NANOGPT" "$WORK" char
prepare_tinyshakespeare "$NANOGPT" "$WORK" gpt2

# The peer's threads as bench/run_peer_bench.sh sets them for torch: 2 OpenMP threads (OpenBLAS
# takes its thread count from OMP_NUM_THREADS too), OMP_WAIT_POLICY=PASSIVE (spinning OpenMP threads
# take the cores OpenBLAS's pthreads need), OPENBLAS_CORETYPE=SkylakeX (OpenBLAS's AVX-512 kernels).
# (Debian 13's OpenBLAS 0.3.29 picks Cooperlake here by itself: the same AVX-512 sgemm kernels plus
# bf16 ones.) TORCH2_ENV replaces these: the peer's best may be with OPENBLAS_NUM_THREADS=1 added,
# since torch runs attention's batched matmuls (SDPA's math path: with dropout, as on W2) as one
# OpenBLAS call per matrix inside its own OpenMP loop, and each call starts 2 more threads (19x
# slower fp32 bmm at W2's shape in the smoke run; the math path's bmm is fp32 under bf16 autocast
# too). Ours: OMP_NUM_THREADS=2, libgomp's default wait policy.
export OMP_NUM_THREADS=2
read -ra PEER_ENV <<<"${TORCH2_ENV:-OMP_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE OPENBLAS_CORETYPE=SkylakeX}"
RSS_FILE=$WORK/torch2_peak_rss_kib

in_root() {  # in_root CMD...: CMD in the Debian 13 root, in $PY, clean environment + PEER_ENV
  # (unbuffered: the logs show each iteration as it ends)
  /usr/bin/time -f %M -o "$RSS_FILE" unshare --mount --propagation private -- /bin/sh -ec '
    r=$1 w=$2 py=$3; shift 3
    for d in dev proc sys; do mount --rbind "/$d" "$r/$d"; done
    mkdir -p "$r$w"; mount --bind "$w" "$r$w"
    exec chroot "$r" /usr/bin/env -i -C "$py" PATH=/usr/bin:/bin HOME=/root PYTHONUNBUFFERED=1 "$@"' \
    sh "$ROOTFS" "$WORK" "$PY" "${PEER_ENV[@]}" "$@"
}

# nanoGPT's char data by its own prepare.py (meta.pkl: vocab 65); the GPT-2 shapes read our GPT-2
# tokens (raw uint16, nanoGPT's format; no meta.pkl, so train.py takes vocab 50304, as GPT-2's).
cp ../shared/data/tinyshakespeare.txt "$PY/data/shakespeare_char/input.txt"
in_root python3 data/shakespeare_char/prepare.py >/dev/null
ln -sfn "$WORK/data/shakespeare_gpt2" "$PY/data/shakespeare_gpt2"
echo "# $(in_root python3 -c 'import torch; print("torch", torch.__version__)'), nanoGPT $REV," \
     "${PEER_ENV[*]}; steps $STEPS (W1 x20), warmup $WARMUP"

torch_run() {  # torch_run <workload> <eager|compile> <dtype> <train.py overrides...>
  local w=$1 mode=$2 dtype=$3; shift 3
  local n log=$WORK/torch2_$w.$mode.$dtype.log
  n=$(steps_of "$w")
  if ! in_root python3 train.py "$@" --dtype="$dtype" --compile=$([ "$mode" = compile ] && echo True || echo False) \
       --device=cpu --max_iters=$((WARMUP + n - 1)) --eval_interval=1000000 --eval_iters=1 \
       --log_interval=1 --always_save_checkpoint=False --wandb_log=False --out_dir="$WORK/out-torch2" \
       >"$log" 2>&1; then
    echo "$w $dtype torch-$mode FAILED (log: $log):" >&2; tail -15 "$log" >&2; return 1
  fi
  # nanoGPT prints "iter N: loss L, time Tms, mfu M%" after every step (log_interval=1)
  python3 - "$log" "$RSS_FILE" "$WARMUP" "$n" "$w $dtype torch-$mode" <<'EOF'
import re, sys
log, rss_file, warmup, n, label = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
steps = [(int(i), float(t)) for i, t in re.findall(r"^iter (\d+): loss \S+, time ([0-9.]+)ms", open(log).read(), re.M)]
kept = sorted(t for i, t in steps if i >= warmup)
if len(kept) != n:
    sys.exit(f"{label}: expected {n} timed iterations in {log}, found {len(kept)}")
rss_gib = int(open(rss_file).read().split()[-1]) / 2**20
warm_s = sum(t for i, t in steps if i < warmup) / 1000
print(f"{label} median_ms={kept[len(kept) // 2]:.1f} peak_rss={rss_gib:.2f} GiB warmup_s={warm_s:.1f}")
EOF
}

for w in $WORKLOADS; do
  case $w in  # nanoGPT's overrides for our workloads (its defaults: bias=False, GPT-2 124M shapes)
    W1) args=(config/train_shakespeare_char.py --batch_size=12 --block_size=64 --n_layer=4 --n_head=4
              --n_embd=128 --dropout=0.0) ;;
    W2) args=(config/train_shakespeare_char.py --gradient_accumulation_steps=1) ;;
    W3) args=(--dataset=shakespeare_gpt2 --batch_size=4 --block_size=64 --gradient_accumulation_steps=1) ;;
    W3p) args=(--dataset=shakespeare_gpt2 --batch_size=4 --block_size=1024 --gradient_accumulation_steps=1) ;;
    *) echo "unknown workload $w (W1 W2 W3 W3p)" >&2; exit 2 ;;
  esac
  if [ "$OURS" = 1 ]; then
    for dtype in float32 bfloat16; do ours_workload "$w" $dtype; done
  fi
  for s in $SETTINGS; do
    torch_run "$w" "${s%%:*}" "${s#*:}" "${args[@]}"
  done
done
