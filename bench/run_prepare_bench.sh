#!/usr/bin/env bash
# Benchmark of `nanogpt prepare` on generated corpora (issue 21's targets; results in
# docs/benchmarks.md): wall time, MB/s and peak RSS (GNU time) of GPT-2 BPE on THREADS threads with
# the default 1 GiB memory budget, formats nanogpt and llmc, on a SIZE corpus; the llm.c shards
# then train a few iterations of a tiny model; and an OLD_SIZE corpus side by side with an older
# build (e.g. one of commit 35b4b12, before streaming), outputs compared byte for byte.
# Usage (from anywhere):
#   bench/run_prepare_bench.sh [--old OLD_NANOGPT] [--size 10G] [--old-size 2G] [--threads 2]
#                              [--work DIR] [--build DIR] [--keep]
#   The corpora (bench_make_corpus, seed 1) stay in WORK (default /tmp/nanogpt_prepare_bench) for
#   the next run; token outputs are removed as soon as they are measured unless --keep. Disk: the
#   corpus plus about 1.1x its size per output kept.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
build="$repo/build"
old=""
size=10G
old_size=2G
threads=2
work=/tmp/nanogpt_prepare_bench
keep=0
while (($#)); do
  case "$1" in
    --old) old="$2"; shift 2 ;;
    --size) size="$2"; shift 2 ;;
    --old-size) old_size="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    *) echo "unknown option $1 (see the usage at the top of $0)" >&2; exit 2 ;;
  esac
done
nanogpt="$build/nanogpt"
make_corpus="$build/bench_make_corpus"
for f in "$nanogpt" "$make_corpus"; do
  [[ -x "$f" ]] || { echo "missing $f: cmake --build $build --target nanogpt bench_make_corpus" >&2; exit 1; }
done
[[ -z "$old" || -x "$old" ]] || { echo "--old $old is not an executable" >&2; exit 1; }
[[ -x /usr/bin/time ]] || { echo "GNU time (/usr/bin/time) is needed for peak RSS: apt-get install time" >&2; exit 1; }
mkdir -p "$work"

corpus() {  # corpus SIZE -> path (generated once)
  local path="$work/corpus_$1.txt"
  [[ -f "$path" ]] || "$make_corpus" --out "$path" --bytes "$1" --seed 1 >&2
  echo "$path"
}

rows=()
# measure LABEL BIN INPUT OUT_DIR [KEYS...]: one prepare, a table row, its summary on stderr.
measure() {
  local label=$1 bin=$2 input=$3 out=$4
  shift 4
  rm -rf "$out"
  /usr/bin/time -f "%e %M" -o "$work/time.txt" "$bin" prepare --tokenizer=gpt2 --input="$input" \
    --out_dir="$out" --threads="$threads" "$@" > "$work/summary.txt"
  sed 's/^/    /' "$work/summary.txt" >&2
  local wall rss bytes
  read -r wall rss < "$work/time.txt"
  bytes=$(stat -c %s "$input")
  rows+=("$(awk -v l="$label" -v w="$wall" -v r="$rss" -v b="$bytes" \
    'BEGIN { printf "| %s | %.1f GB | %.1f s | %.1f MB/s | %.2f GB |", l, b / 1e9, w, b / 1e6 / w, r * 1024 / 1e9 }')")
  echo "${rows[-1]}" >&2
}

echo "== $size corpus, GPT-2 BPE, $threads threads, default memory budget" >&2
big=$(corpus "$size")
measure "nanogpt.cpp, format nanogpt" "$nanogpt" "$big" "$work/out_nanogpt" --format=nanogpt
((keep)) || rm -rf "$work/out_nanogpt"
measure "nanogpt.cpp, format llmc" "$nanogpt" "$big" "$work/out_llmc" --format=llmc
ls "$work/out_llmc" | sed 's/^/    /' >&2

echo "== the llm.c shards train (sequential batches, tiny model, 3 iterations)" >&2
rm -rf "$work/run"
"$nanogpt" train --data_dir="$work/out_llmc" --sampling=sequential --batch_size=2 --block_size=32 \
  --n_layer=1 --n_head=1 --n_embd=16 --max_iters=3 --eval_interval=3 --eval_iters=1 \
  --log_interval=1 --out_dir="$work/run" > "$work/train.txt" 2>&1 ||
  { cat "$work/train.txt" >&2; echo "training on the llm.c shards FAILED" >&2; exit 1; }
grep -E "iter 2: loss" "$work/train.txt" | sed 's/^/    /' >&2
rm -rf "$work/run"
((keep)) || rm -rf "$work/out_llmc"

echo "== $old_size corpus side by side${old:+ with $old}" >&2
small=$(corpus "$old_size")
measure "nanogpt.cpp, $old_size, format nanogpt" "$nanogpt" "$small" "$work/new_small"
if [[ -n "$old" ]]; then
  measure "old build ($("$old" --version 2>/dev/null | sed -n "s/.*(git \([0-9a-f]*\).*/commit \1/p" | head -1)), $old_size" \
    "$old" "$small" "$work/old_small"
  for f in train.bin val.bin; do
    cmp "$work/new_small/$f" "$work/old_small/$f" ||
      { echo "$f DIFFERS between the builds" >&2; exit 1; }
  done
  echo "    train.bin and val.bin identical between the builds" >&2
  rm -rf "$work/old_small"
fi
((keep)) || rm -rf "$work/new_small"

echo
echo "| what | input | wall | throughput | peak RSS |"
echo "|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
