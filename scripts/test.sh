#!/usr/bin/env bash
# The whole test suite: installs and builds (scripts/setup.sh), then runs every test through CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
ctest --preset release --output-on-failure -j 2 --timeout 900
