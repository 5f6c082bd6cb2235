#!/usr/bin/env bash
# Installs the peers that benchmarks compare against (not needed to build, test or use nanogpt):
# Debian's python3-torch (CPU) with OpenBLAS (without libopenblas, torch falls back to the
# reference BLAS and runs ~20x slower: an unfair peer), and the Node encoders via scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
need=()
for p in python3-torch python3-numpy libopenblas0-pthread; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if ((${#need[@]})); then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
