#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang-14, ASan + UBSan) and runs each for SECONDS (default
# 300), two at a time, on a working corpus in build-fuzz/corpus/<name> seeded read-only from the
# committed fuzz/corpus/<name>. Prints one line per target (executions, result) and exits 1 if any
# target found a crash, leak, OOM or timeout; their inputs are kept in build-fuzz/artifacts/<name>/.
# Usage: scripts/fuzz.sh [SECONDS [TARGET...]]   e.g. scripts/fuzz.sh 300 config safetensors
# (the project's other dependencies come from scripts/setup.sh)
set -euo pipefail
cd "$(dirname "$0")/.."

SECS=${1:-300}
[[ "$SECS" =~ ^[0-9]+$ ]] || { echo "usage: scripts/fuzz.sh [seconds per target [target...]]" >&2; exit 2; }
shift $(($# > 0 ? 1 : 0))

APT_PACKAGES=(clang-14 libclang-rt-14-dev)  # clang++-14 and its libFuzzer/sanitizer runtimes
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "fuzz: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

cmake --preset fuzz >/dev/null
cmake --build --preset fuzz

OUT=build-fuzz
TARGETS=()
for src in fuzz/*_fuzz.cpp; do
  name=$(basename "$src" _fuzz.cpp)
  if (($# == 0)) || [[ " $* " == *" $name "* ]]; then TARGETS+=("$name"); fi
done
((${#TARGETS[@]})) || { echo "fuzz: no target named $* (see fuzz/*_fuzz.cpp)" >&2; exit 2; }

# run_target NAME: fuzzes NAME for $SECS seconds; writes $OUT/logs/NAME.{log,result}.
run_target() {
  local name=$1
  local corpus="$OUT/corpus/$name" artifacts="$OUT/artifacts/$name" tmp="$OUT/tmp/$name"
  rm -rf "$artifacts" "$tmp"
  mkdir -p "$corpus" "$artifacts" "$tmp" "fuzz/corpus/$name"
  local args=(-max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024
              -detect_leaks=1 -print_final_stats=1 -artifact_prefix="$artifacts/")
  [ -f "fuzz/$name.dict" ] && args+=(-dict="fuzz/$name.dict")
  local rc=0
  # New inputs go to the first corpus directory only; the committed seeds are read, never written.
  TMPDIR="$tmp" OMP_NUM_THREADS=1 \
    ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=0:abort_on_error=0" \
    UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
    "$OUT/fuzz_$name" "${args[@]}" "$corpus" "fuzz/corpus/$name" \
    </dev/null >"$OUT/logs/$name.log" 2>&1 || rc=$?
  local execs
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$OUT/logs/$name.log" | tail -1 |
          grep -o '[0-9]*$' || true)
  [ -n "$execs" ] || execs=$(grep -o '^#[0-9]*' "$OUT/logs/$name.log" | tail -1 | tr -d '#' || true)
  local found result
  found=$(find "$artifacts" -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'oom-*' \
          -o -name 'timeout-*' \) | sort | tr '\n' ' ')
  if [ "$rc" -eq 0 ] && [ -z "$found" ]; then
    result="ok"
  elif [ -n "$found" ]; then
    result="FOUND $(basename "${found%% *}" | cut -d- -f1): $found(log: $OUT/logs/$name.log)"
  else
    result="FAILED (exit $rc, log: $OUT/logs/$name.log)"
  fi
  rm -rf "$tmp"
  printf '%-22s %12s execs  %s\n' "fuzz_$name" "${execs:-?}" "$result" >"$OUT/logs/$name.result"
}

mkdir -p "$OUT/logs"
rm -f "$OUT"/logs/*.result
echo "fuzz: ${#TARGETS[@]} targets, ${SECS}s each, 2 at a time"
running=0
for name in "${TARGETS[@]}"; do
  if ((running == 2)); then
    wait -n || true
    running=$((running - 1))
  fi
  run_target "$name" &
  running=$((running + 1))
done
wait || true

status=0
for name in "${TARGETS[@]}"; do
  if [ -f "$OUT/logs/$name.result" ]; then
    cat "$OUT/logs/$name.result"
    grep -q ' ok$' "$OUT/logs/$name.result" || status=1
  else
    printf '%-22s %12s execs  %s\n' "fuzz_$name" "?" "NO RESULT (see $OUT/logs/$name.log)"
    status=1
  fi
done
exit $status
