#!/usr/bin/env bash
# Installs the peers that benchmarks compare against (not needed to build, test or use nanogpt):
# Debian's python3-torch (CPU) with OpenBLAS (without libopenblas, torch falls back to the
# reference BLAS and runs ~20x slower: an unfair peer), the Node encoders via scripts/setup.sh, and
# the Debian 13 root with PyTorch 2.6 that nanoGPT's own train.py runs in (bench/setup_torch2_root.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
need=()
for p in python3-torch python3-numpy libopenblas0-pthread; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if ((${#need[@]})); then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
$SUDO bash bench/setup_torch2_root.sh >/dev/null  # needs root: mmdebstrap --mode=root
