# Sourced by the peer benches (bench/run_peer_bench.sh, bench/run_torch2_peer_bench.sh): issue 7's
# workloads as our binary runs them, and its one result line. The sourcing script sets NANOGPT (our
# binary), WORK (the bench work folder, holding data/shakespeare_{char,gpt2}), ROOT (the repository)
# and STEPS; it runs from the repository root.
#   W1  nanoGPT's CPU recipe: 4L/4H/128, T 64, B 12, char tinyshakespeare
#   W2  nanoGPT's baby GPT: 6L/6H/384, T 256, B 64, dropout 0.2, char tinyshakespeare
#   W3  GPT-2 124M shapes, B 4, T 64          W3p (W3') GPT-2 124M shapes, B 4, T 1024

steps_of() {  # W1's steps take milliseconds: time 20x as many of them
  if [ "$1" = W1 ]; then echo $((STEPS * 20)); else echo "$STEPS"; fi
}

ours() {  # ours <label> <dtype> <train args...>: "<label> <dtype> ours median_ms=<..> peak_rss=<..>"
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

ours_workload() {  # ours_workload <W1|W2|W3|W3p> <dtype>: our binary on that workload
  local w=$1 dtype=$2 T=64
  case $w in
    W1) ours W1 "$dtype" "$ROOT/config/train_shakespeare_char_cpu.py" ;;
    W2) ours W2 "$dtype" "$ROOT/config/train_shakespeare_char.py" --gradient_accumulation_steps=1 ;;
    W3|W3p)
      [ "$w" = W3p ] && T=1024
      ours "$w" "$dtype" "$ROOT/config/train_gpt2.py" --dataset=shakespeare_gpt2 --batch_size=4 \
        --block_size=$T --gradient_accumulation_steps=1 ;;
    *) echo "unknown workload $w (W1 W2 W3 W3p)" >&2; return 2 ;;
  esac
}
