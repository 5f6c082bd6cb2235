#!/usr/bin/env bash
# The whole test suite: installs and builds (scripts/setup.sh), then runs every test through CTest,
# then prints the slowest tests against their limit (scripts/test_budget.py; it fails when a test
# that passed took more than half of it).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
LIMIT_S=900
rc=0
ctest --preset release --output-on-failure -j 2 --timeout "$LIMIT_S" \
  --output-junit "$PWD/build/ctest-junit.xml" || rc=$?
python3 scripts/test_budget.py build/ctest-junit.xml "$LIMIT_S" 12 || { [ "$rc" != 0 ] || rc=1; }
exit "$rc"
