#!/usr/bin/env bash
# Makes the Debian 13 ("trixie") root that the PyTorch 2 peer runs in (bench only: never a build or
# test dependency): python3-torch 2.6 (oneDNN 3.7, SDPA, torch.compile) from Debian's archive,
# made by mmdebstrap in root mode. Idempotent: skips when the root is there and complete (its marker
# lists the same packages); otherwise makes it afresh in <root>.partial and renames it when done.
# Where: $TORCH2_ROOT, default ~/.cache/nanogpt-peers/trixie-torch (outside the repository). Needs root
# (mmdebstrap --mode=root, and the bench's chroot). Takes ~2 min and ~1.6 GiB.
# Usage: bash bench/setup_torch2_root.sh   (prints the root's path on its last line)
set -euo pipefail
ROOTFS=${TORCH2_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/nanogpt-peers/trixie-torch}
MIRROR=${TORCH2_MIRROR:-http://deb.debian.org/debian}
# libopenblas0-pthread: else torch's BLAS is the reference one (~20x slower); python3-setuptools and
# libtorch-dev, g++ and python3-dev: torch.compile's inductor builds C++ kernels with them (without
# libtorch-dev it fails); python3-requests: nanoGPT's data/shakespeare_char/prepare.py imports it.
PACKAGES=python3-torch,python3-numpy,libopenblas0-pthread,python3-setuptools,libtorch-dev,g++,python3-dev,python3-requests
MARKER=.nanogpt-peer-complete

if [ -f "$ROOTFS/$MARKER" ] && [ "$(cat "$ROOTFS/$MARKER")" = "$PACKAGES" ]; then
  echo "$ROOTFS"; exit 0
fi
[ "$(id -u)" -eq 0 ] || { echo "setup_torch2_root: needs root (mmdebstrap --mode=root, chroot)" >&2; exit 1; }
command -v mmdebstrap >/dev/null || {
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mmdebstrap >/dev/null; }
case $ROOTFS in /?*) ;; *) echo "setup_torch2_root: TORCH2_ROOT must be an absolute path, not '$ROOTFS'" >&2; exit 1 ;; esac
if [ -e "$ROOTFS" ] && [ ! -f "$ROOTFS/$MARKER" ] && [ -n "$(ls -A "$ROOTFS")" ]; then
  echo "setup_torch2_root: $ROOTFS exists, is not empty and was not made here; remove it or set TORCH2_ROOT" >&2
  exit 1
fi
mkdir -p "$(dirname "$ROOTFS")"
echo "setup_torch2_root: making a Debian 13 root with PyTorch in $ROOTFS (~2 min)" >&2
rm -rf "$ROOTFS.partial" "$ROOTFS"
start=$SECONDS
if ! mmdebstrap --quiet --mode=root --variant=apt --include="$PACKAGES" trixie "$ROOTFS.partial" "$MIRROR" \
     >"$ROOTFS.log" 2>&1; then
  echo "setup_torch2_root: mmdebstrap failed (log: $ROOTFS.log):" >&2; tail -20 "$ROOTFS.log" >&2
  rm -rf "$ROOTFS.partial"; exit 1
fi
# (without /proc mounted torch's cpuinfo complains on stderr: kept out unless the import fails)
if ! check=$(chroot "$ROOTFS.partial" python3 -c 'import torch, numpy, setuptools; print("torch", torch.__version__)' 2>&1); then
  echo "setup_torch2_root: torch does not import in the new root:" >&2; echo "$check" >&2; exit 1
fi
echo "$PACKAGES" >"$ROOTFS.partial/$MARKER"
mv "$ROOTFS.partial" "$ROOTFS"
echo "setup_torch2_root: made in $((SECONDS - start)) s (${check##*$'\n'})" >&2
echo "$ROOTFS"
