# Sourced by the bench scripts (from the repository root): prepares tinyshakespeare's token files
# once per bench work folder.
# prepare_tinyshakespeare BIN WORK TOKENIZER: WORK/data/shakespeare_<TOKENIZER>/{train,val}.bin
# written by BIN (a nanogpt binary) with --tokenizer=TOKENIZER (char or gpt2), unless already there;
# the corpus is $TEXT if set.
prepare_tinyshakespeare() {
  local bin=$1 work=$2 tok=$3
  [ -f "$work/data/shakespeare_$tok/train.bin" ] ||
    "$bin" prepare --tokenizer="$tok" --input="${TEXT:-../shared/data/tinyshakespeare.txt}" \
      --out_dir="$work/data/shakespeare_$tok" >/dev/null
}
