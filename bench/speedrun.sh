#!/usr/bin/env bash
# The CPU speedrun (issue 19): nanoGPT's recipe and ours side by side on character-level
# tinyshakespeare (nanoGPT's data and split), SEEDS seeds each, time and tokens to the track's
# target validation loss taken on the WHOLE validation split (--target_loss, evaluation time
# counted and stated apart), and an ablation that turns each technique of our recipe off in turn.
# Tracks:
#   cpu   val <= 1.88: nanoGPT's CPU recipe (config/train_shakespeare_char_cpu.py, 2000 iters) vs
#         config/speedrun_shakespeare_char_cpu.py
#   baby  val <= 1.47: nanoGPT's baby GPT (config/train_shakespeare_char.py, 5000 iters: ~3.3 h
#         per seed here) vs config/speedrun_shakespeare_char.py. nanoGPT's runs stop after their
#         first NANOGPT_BABY_ITERS iterations (default 300: about the wall time ours takes to the
#         target), their learning-rate schedule unchanged (still decaying to 5000), their sampled
#         evaluation off (200 batches: minutes each here); the whole-split loss is taken there,
#         so the row says where nanoGPT's recipe stands when ours is done. 5000: the whole recipe.
# Every set of runs is a `nanogpt sweep` (its sweep file written to $OUT/<track>-<recipe>.py), so
# an interrupted bench resumes where it stopped. Then bench/speedrun_table.py writes
# docs/speedrun.md (records table, ablation, the machine's CPU and measured peaks).
# Nothing else may run on the machine meanwhile: these are wall times.
# Usage: bash bench/speedrun.sh [tracks, default "cpu"]
#   env: SEEDS=3  OUT=build/bench_work/speedrun  ABLATION=1 (0: the records only)
#        RECIPES="nanogpt ours" (which recipes to run)  DOC=docs/speedrun.md
#        NANOGPT_BABY_ITERS=300 (the baby track: where nanoGPT's runs stop)
#        COMMAND_NOTE: the doc's "Command of this bench" text, when several invocations made it
#        HELDOUT=9001,...,9005: our recipe once more on these seeds, which no search used (the
#        searches take 1337, 1338, ...), for the records table's held-out column; "" skips it
#        NANOGPT=build/nanogpt (the binary)  TEXT=../shared/data/tinyshakespeare.txt (the corpus)
#        PARALLEL=N (a many-core machine, e.g. the lent GPU machine's 16-core Xeon): every seed's
#        run at once, N at a time, each pinned by taskset to its own CORES_PER_RUN (default 2)
#        cores with as many threads, so each is still a two-core run; a seed is then a one-seed
#        sweep of its own (OUT/<name>/parallel/s<seed>), its run moved into OUT/<name>/runs when
#        all are done. The runs share the machine's memory bandwidth and caches: the wall times
#        are those of N runs at once, and docs/speedrun.md says so in the command line. A TERM
#        (`timeout`) stops the runs where they are and still writes the table, which counts a run
#        cut off before its end as not (yet) reached, saying so.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
TRACKS=${1:-cpu}
SEEDS=${SEEDS:-3}
OUT=${OUT:-build/bench_work/speedrun}
ABLATION=${ABLATION:-1}
RECIPES=${RECIPES:-"nanogpt ours"}
DOC=${DOC:-docs/speedrun.md}
NANOGPT_BABY_ITERS=${NANOGPT_BABY_ITERS:-300}
HELDOUT=${HELDOUT-9001,9002,9003,9004,9005}
BIN=${NANOGPT:-$ROOT/build/nanogpt}
TEXT=${TEXT:-$ROOT/../shared/data/tinyshakespeare.txt}
PARALLEL=${PARALLEL:-0}
CORES_PER_RUN=${CORES_PER_RUN:-2}
if [ "$PARALLEL" -gt 0 ] && [ $((PARALLEL * CORES_PER_RUN)) -gt "$(nproc)" ]; then
  echo "PARALLEL=$PARALLEL runs of CORES_PER_RUN=$CORES_PER_RUN cores need $((PARALLEL * CORES_PER_RUN))" \
       "cores; this machine has $(nproc): lower PARALLEL" >&2
  exit 2
fi
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)}
[ -f "$OUT/data/shakespeare_char/train.bin" ] ||
  "$BIN" prepare --tokenizer=char --input="$TEXT" \
    --out_dir="$OUT/data/shakespeare_char" >/dev/null

# The techniques the ablation turns off, one run set each: name and the keys that undo it. The
# head's tying is flipped from what the recipe <config> ($1) chose, whichever way that is. Issue
# 33's five first (ReLU², RMSNorm, zero init, soft cap, WSD: a sweep runs its variants in order,
# so an interrupted ablation has those), then the rest.
ablations() {
  cat <<'LIST'
no_relu2 --activation=gelu
no_rmsnorm --norm=layernorm
no_zero_init --zero_init_proj=False
no_softcap --logit_softcap=0
LIST
  # the schedule: a cosine recipe is ablated with warmup-stable-decay (the baby track's WSD before
  # it: a 40% cooldown of shape 1-sqrt), a WSD recipe with cosine
  if grep -q "^lr_schedule *= *'cosine'" "$1"; then
    echo "wsd_schedule --lr_schedule=wsd --cooldown_fraction=0.4 --cooldown=1-sqrt"
  else
    echo "cosine_schedule --lr_schedule=cosine"
  fi
  if grep -q '^tie_embeddings *= *True' "$1"; then
    echo "untied_head --tie_embeddings=False"
  else
    echo "tied_head --tie_embeddings=True"
  fi
  # techniques a recipe may leave out: ablated only where the recipe uses them
  if grep -q '^context_warmup_iters *= *[1-9]' "$1"; then
    echo "no_context_warmup --context_warmup_iters=0"
  fi
  if grep -q '^attn_dropout *= *0\(\.0*\)\? *\(#.*\)\?$' "$1"; then
    echo "attn_dropout_on --attn_dropout=-1"
  fi
  if grep -q '^qk_norm_gain *= *[0-9.]' "$1" && ! grep -q '^qk_norm_gain *= *1\(\.0*\)\? *\(#.*\)\?$' "$1"; then
    echo "no_qk_norm_gain --qk_norm_gain=1"
  fi
  if grep -q '^unet_skips *= *True' "$1"; then
    echo "no_unet_skips --unet_skips=False"
  fi
  if grep -q '^attn_gain *= *0*\.\?[0-9]*[1-9]' "$1"; then
    echo "no_attn_gain --attn_gain=0"
  fi
  if grep -q '^ema_decay *= *0*\.[0-9]*[1-9]' "$1"; then
    echo "no_ema --ema_decay=0"
  fi
  if grep -q '^\(embedding\|head\)_learning_rate *= *[0-9.]*[1-9]' "$1"; then
    echo "no_own_rates --embedding_learning_rate=0 --head_learning_rate=0"
  fi
  cat <<'LIST'
no_muon --optimizer=adamw
no_rotary --position=learned
no_qk_norm --qk_norm=False --qk_norm_gain=1
LIST
}

# PARALLEL mode's slots: slot k pins its run to cores k*CORES_PER_RUN.. (slot_pids[k]: its job).
slot_pids=()
parallel_names=()
# A TERM (e.g. `timeout`) in PARALLEL mode stops every run where it is (each sweep stops safely on
# it) and starts no more; the runs done so far and those cut off are gathered all the same, and
# the table marks the latter.
stopping=0
if [ "$PARALLEL" -gt 0 ]; then
  trap 'stopping=1; echo "== TERM: stopping the runs where they are"; kill "${slot_pids[@]}" 2>/dev/null || true' TERM
fi
# in_free_slot <log> <command...>: starts the command in the background in the first free slot
# (waiting for one), pinned to that slot's cores with as many OpenMP threads.
in_free_slot() {
  local log=$1; shift
  while [ "$stopping" = 0 ]; do
    local k
    for ((k = 0; k < PARALLEL; k++)); do
      local pid=${slot_pids[k]:-}
      if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null; then
        local first=$((k * CORES_PER_RUN))
        OMP_NUM_THREADS=$CORES_PER_RUN taskset -c "$first-$((first + CORES_PER_RUN - 1))" "$@" \
          > "$log" 2>&1 &
        slot_pids[k]=$!
        echo "   slot $k (cores $first-$((first + CORES_PER_RUN - 1))): $(basename "$log" .log)"
        return
      fi
    done
    wait -n || true
  done
}

# sweep <track> <recipe> <base config> <target> [keys for nanoGPT's runs] [seeds] [name]: writes
# the sweep file and runs it (seeds: a count from 1337 or a quoted list; name: the sweep's folder,
# <track>-<recipe> by default). PARALLEL mode: one one-seed sweep per seed, started in free slots.
sweep() {
  local track=$1 recipe=$2 base=$3 target=$4 nanogpt_keys=${5:-} seeds=${6:-$SEEDS}
  local name=${7:-$track-$recipe}
  if [ "$PARALLEL" -gt 0 ]; then
    local list seed
    if [[ $seeds =~ ^[0-9]+$ ]]; then list=$(seq 1337 $((1337 + seeds - 1))); else list=${seeds//[\',]/ }; fi
    echo "== $track / $recipe: seeds $(echo $list) at once, $CORES_PER_RUN cores each"
    for seed in $list; do
      write_sweep_file "$track" "$recipe" "$base" "$target" "$nanogpt_keys" "'$seed'" "$name" \
        "$OUT/$name/parallel/s$seed" > "$OUT/$name.s$seed.py"
      in_free_slot "$OUT/$name.s$seed.log" bash -c \
        'cd "$1" && exec "$2" sweep "$3" --progress=lines' _ "$OUT" "$BIN" "$OUT/$name.s$seed.py"
    done
    parallel_names+=("$name")
    return
  fi
  local file=$OUT/$name.py
  write_sweep_file "$track" "$recipe" "$base" "$target" "$nanogpt_keys" "$seeds" "$name" \
    "$OUT/$name" > "$file"
  echo "== $track / $recipe: $file"
  (cd "$OUT" && "$BIN" sweep "$file" --progress=lines)
  measured_with "$name"
}

# what measured a sweep, for the records table (a later bench of another track keeps this one's row)
measured_with() {
  printf '%s\n%s\n' "$("$BIN" --version | head -1)" "$(date -u +%F)" > "$OUT/$1/measured_with.txt"
}

# write_sweep_file <track> <recipe> <base> <target> <nanoGPT keys> <seeds> <name> <out_dir>
write_sweep_file() {
  local track=$1 recipe=$2 base=$3 target=$4 nanogpt_keys=$5 seeds=$6 name=$7 out_dir=$8
  {
    echo "# written by bench/speedrun.sh: the $track track's $recipe recipe, seeds $seeds"
    echo "base = '$ROOT/$base'"
    echo "out_dir = '$out_dir'"
    echo "seeds = $seeds"
    echo "stop_at_target = True"
    echo "always_save_checkpoint = False"
    # (a sweep file's own target_loss is the sweep's, on the sampled eval: the runs get theirs,
    # on the whole validation split, from their config -- ours -- or from this variation)
    if [ "$recipe" = nanogpt ]; then
      echo "model_nanogpt = '--target_loss=$target --target_eval_interval=250$nanogpt_keys'"
    else
      echo "model_ours = ''"
    fi
    if [ "$recipe" = ours ] && [ "$ABLATION" = 1 ] && [ "$name" = "$track-$recipe" ]; then
      ablations "$ROOT/$base" | while read -r name keys; do echo "model_$name = '$keys'"; done
    fi
    echo "optim_default = ''"
  }
}

for track in $TRACKS; do
  case $track in
    cpu) target=1.88 nanogpt=config/train_shakespeare_char_cpu.py ours=config/speedrun_shakespeare_char_cpu.py
         nanogpt_keys= ;;
    baby) target=1.47 nanogpt=config/train_shakespeare_char.py ours=config/speedrun_shakespeare_char.py
          nanogpt_keys=" --max_iters=$NANOGPT_BABY_ITERS --eval_interval=5000 --eval_iters=1" ;;
    *) echo "unknown track '$track' (expected cpu or baby)" >&2; exit 2 ;;
  esac
  for recipe in $RECIPES; do
    base=$nanogpt; [ "$recipe" = ours ] && base=$ours
    sweep "$track" "$recipe" "$base" "$target" "$nanogpt_keys"
  done
  # our recipe again on seeds that no search used: the records table's held-out column
  if [[ " $RECIPES " == *" ours "* ]] && [ -n "$HELDOUT" ]; then
    sweep "$track" ours "$ours" "$target" "" "'$HELDOUT'" "$track-ours-heldout"
  fi
done

# PARALLEL mode: every run done, each sweep's runs gathered where the table reads them
parallel_note=""
if [ "$PARALLEL" -gt 0 ]; then
  parallel_note=" PARALLEL=$PARALLEL: that many runs at once, each pinned to its own $CORES_PER_RUN cores"
  echo "== waiting for the runs"
  wait || true
  wait || true  # (after a TERM: the runs stopping)
  for name in "${parallel_names[@]}"; do
    mkdir -p "$OUT/$name/runs"
    for run in "$OUT/$name"/parallel/s*/runs/*; do
      [ -d "$run" ] || continue
      rm -rf "$OUT/$name/runs/$(basename "$run")"; mv "$run" "$OUT/$name/runs/"
    done
    measured_with "$name"
  done
fi

python3 bench/speedrun_table.py "$OUT" "$DOC" "$("$BIN" --version | head -1)" \
  "${COMMAND_NOTE:-bash bench/speedrun.sh \"$TRACKS\" (SEEDS=$SEEDS ABLATION=$ABLATION RECIPES=\"$RECIPES\" HELDOUT=$HELDOUT$parallel_note)}"
echo "wrote $DOC"
