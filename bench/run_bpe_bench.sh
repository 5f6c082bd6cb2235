#!/usr/bin/env bash
# Benchmark W5 side by side: our GPT-2 BPE encoder (bench_bpe_encode) and the Node encoders
# (js-tiktoken, gpt-3-encoder) on the same text, ids compared, and the speed ratio printed.
# Usage: bench/run_bpe_bench.sh [BUILD_DIR] [NODE_MODULES] [TEXT]
#   defaults: build, data/npm/node_modules, ../shared/data/tinyshakespeare.txt (relative to repo)
#   Extra flags for the Node side via NODE_BENCH_FLAGS, e.g. NODE_BENCH_FLAGS="--gpt3 skip".
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$repo/build}"
modules="${2:-$repo/data/npm/node_modules}"
text="${3:-$repo/../shared/data/tinyshakespeare.txt}"
bench="$build/bench_bpe_encode"
[[ -x "$bench" ]] || { echo "missing $bench: build it with 'ninja -C $build bench_bpe_encode'" >&2; exit 1; }
[[ -d "$modules/js-tiktoken" && -d "$modules/gpt-3-encoder" ]] ||
  { echo "js-tiktoken / gpt-3-encoder not in $modules: run scripts/setup.sh" >&2; exit 1; }
ids="$(mktemp /tmp/nanogpt_bpe_ids.XXXXXX)"
trap 'rm -f "$ids"' EXIT

ours_out="$("$bench" --text "$text" --vocab "$modules/gpt-3-encoder" --out "$ids")"
echo "$ours_out" | grep -v '^RESULT'
echo
# shellcheck disable=SC2086
node_out="$(node "$repo/bench/node/bpe_bench.js" --modules "$modules" --text "$text" --ours "$ids" ${NODE_BENCH_FLAGS:-})"
echo "$node_out" | grep -v -e '^RESULT' -e '^IDS'
echo

# Ratios against the fastest Node encoder whose ids are identical to ours.
{ echo "$ours_out" | grep '^RESULT'; echo "$node_out" | grep -e '^RESULT' -e '^IDS'; } | awk '
  $1 == "RESULT" && $2 ~ /^ours_/ { ours[$2] = $3; order[++n] = $2 }
  $1 == "RESULT" && $2 !~ /^ours_/ { node[$2] = $3 }
  $1 == "IDS" { same[$2] = ($3 == "identical") }
  END {
    best = ""; for (k in node) if (same[k] && (best == "" || node[k] > node[best])) best = k
    if (best == "") { print "no Node encoder produced ids identical to ours"; exit 1 }
    printf "fastest Node encoder with identical ids: %s at %.2f MB/s\n", best, node[best]
    for (i = 1; i <= n; i++) printf "  %-16s %8.2f MB/s  = %6.1fx\n", order[i], ours[order[i]], ours[order[i]] / node[best]
    for (k in node) if (!same[k]) { print "ids DIFFER from ours: " k; bad = 1 }
    exit bad
  }'
