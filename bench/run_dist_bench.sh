#!/usr/bin/env bash
# Data-parallel on this machine, side by side in one run: 1 rank x 2 threads vs 2 ranks x 1 thread
# (mpirun, shared memory) vs 2 ranks on two network-namespace hosts over a veth link (TCP), for the
# baby GPT (6x6x384, T 256) and GPT-2 124M shapes (12x12x768, T 256). Prints one line per run:
# median step time, tokens/s and the share of the step spent waiting on communication.
#   Usage: bash bench/run_dist_bench.sh [iters=6]      (namespace runs need root; skipped otherwise)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/bench_data.sh
ITERS=${1:-6}
ROOT=$PWD
BIN="$ROOT/build/nanogpt"
WORK=build/bench_work; mkdir -p "$WORK"
prepare_tinyshakespeare "$BIN" "$WORK" char
prepare_tinyshakespeare "$BIN" "$WORK" gpt2
cd "$WORK"
export OMP_WAIT_POLICY=PASSIVE
COMMON="--max_iters=$ITERS --eval_interval=100000 --eval_iters=1 --log_interval=1 --always_save_checkpoint=False"
BABY="$ROOT/config/train_shakespeare_char.py --dtype=float32 --dataset=shakespeare_char --batch_size=16 --gradient_accumulation_steps=4 $COMMON"
GPT2="$ROOT/config/train_gpt2.py --dtype=float32 --dataset=shakespeare_gpt2 --batch_size=2 --block_size=256 --gradient_accumulation_steps=2 $COMMON"
MPI="mpirun --allow-run-as-root --oversubscribe -np 2"

NS_A=ngbenchA NS_B=ngbenchB
ns_up=0
if sh "$ROOT/tests/mpi/netns_hosts.sh" up $NS_A $NS_B 2>/dev/null; then ns_up=1; else
  sh "$ROOT/tests/mpi/netns_hosts.sh" down $NS_A $NS_B; echo "namespace hosts: not allowed here, skipped"; fi
trap '[ $ns_up = 1 ] && sh "$ROOT/tests/mpi/netns_hosts.sh" down $NS_A $NS_B' EXIT
NS_MPI="env NANOGPT_NETNS_A=$NS_A NANOGPT_NETNS_B=$NS_B ip netns exec $NS_A mpirun --allow-run-as-root \
  --oversubscribe --bind-to none -np 2 --host 10.231.0.1,10.231.0.2 \
  --mca plm_rsh_agent $ROOT/tests/mpi/netns_agent.sh --mca btl tcp,self \
  --mca btl_tcp_if_include 10.231.0.0/24 --mca oob_tcp_if_include 10.231.0.0/24"

# median of field $1 over the iterations after the first in metrics file $2
median() {
  { grep '"loss"' "$2" | tail -n +2 | grep -o "\"$1\":[0-9.e+-]*" || true; } | cut -d: -f2 |
    sort -g | awk '{v[NR]=$1} END {if (NR == 0) print 0; else print v[int((NR + 1) / 2)]}'
}
report() {  # name out_dir
  local ms tok comm
  ms=$(median ms "$2/metrics.jsonl"); tok=$(median tokens_per_s "$2/metrics.jsonl")
  comm=$(median comm_wait_ms "$2/metrics.jsonl")
  awk -v n="$1" -v ms="$ms" -v tok="$tok" -v c="$comm" 'BEGIN {
    printf "{\"run\": \"%s\", \"median_step_ms\": %.1f, \"tokens_per_s\": %.0f, \"comm_wait_ms\": %.1f, \"comm_share\": %.3f}\n",
           n, ms, tok, c, (ms > 0 ? c / ms : 0) }'
}
for shape in baby gpt2; do
  if [ $shape = baby ]; then KEYS=$BABY; else KEYS=$GPT2; fi
  rm -rf out-dist-*
  "$BIN" train $KEYS --threads=2 --out_dir=out-dist-1x2 >/dev/null
  report "$shape: 1 rank x 2 threads" out-dist-1x2
  $MPI "$BIN" train $KEYS --threads=1 --out_dir=out-dist-2x1 >/dev/null 2>&1
  report "$shape: 2 ranks x 1 thread (one host, shared memory)" out-dist-2x1
  if [ $ns_up = 1 ]; then
    $NS_MPI "$BIN" train $KEYS --threads=1 --out_dir=out-dist-ns >/dev/null 2>&1
    report "$shape: 2 ranks x 1 thread (two namespace hosts, TCP over veth)" out-dist-ns
  fi
done
# Calibration of bench/dist_model.sh: one machine's training tokens/s at GPT-2 350M shapes.
rm -rf out-dist-350m
"$BIN" train $GPT2 --n_layer=24 --n_head=16 --n_embd=1024 --threads=2 --out_dir=out-dist-350m >/dev/null
report "gpt2-350M: 1 rank x 2 threads" out-dist-350m
