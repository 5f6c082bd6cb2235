#!/usr/bin/env bash
# scripts/gpu_check.sh: the CUDA backend checked and timed on a lent GPU in one call, beside
# nanoGPT + torch.compile on the same GPU, with the machine's own CPU (an Intel Xeon with AMX) as
# the CPU reference. Two halves:
#   bash scripts/gpu_check.sh prepare   here (a build with the CUDA backend, e.g. build/ configured
#                                       where nvcc is): writes gpu_bundle/ (git-ignored, ~15 MB):
#                                       nanogpt, test_cuda, test_backends (the op harness, the
#                                       whole model and the one trainer on every backend),
#                                       test_distributed where NCCL is built (its Nccl* tests: two
#                                       ranks sharing the GPU; NCCL itself is the GPU machine's,
#                                       PyTorch's nvidia-nccl package) and their non-system
#                                       libraries (xz),
#                                       both corpora tokenized, nanoGPT's source (fetched, never
#                                       committed; NANOGPT_PY_SRC or /work/.mirror, see
#                                       bench/nanogpt_py_src.sh)
#   bash scripts/gpu_check.sh run       on the GPU machine (device tool: carry gpu_bundle): the GPU
#                                       tests, W2 and GPT-2 124M (B 16, T 1024, bf16) for STEPS
#                                       steps with us and with nanoGPT (compile, bf16), W2 on the
#                                       CPU for the loss check, a GPU checkpoint resumed on the CPU;
#                                       one table at the end and in $OUT/gpu_check.md, logs in $OUT.
#                                       PARTS "amx" also runs bench/run_amx_bench.sh (issue 30) on
#                                       the machine's own CPU (an Intel Xeon with AMX) meanwhile,
#                                       pinned to its last 2 cores (everything else to the others),
#                                       into $OUT/amx_bench.txt.
# Without a GPU (the rehearsal here) `run` does everything that needs none and says what it skipped.
# Env: STEPS (default 30), NANOGPT_BUILD_DIR (default build), OUT (default /tmp/gpu_check_out),
# TESTFILTER (GoogleTest filter of the GPU tests, default all),
# PARTS (default "tests w2 cpu gpt2 noepilogue gpuspeedrun multigpu nanogpt"; a rerun can leave
# some out; "multigpu": 2 ranks sharing the GPU over NCCL against 1 rank, and ZeRO-1 against
# plain data parallelism, AdamW and Muon, bf16 and fp32;
# "gpuspeedrun": both speedrun recipes to their targets on the GPU, GPU_SPEEDRUN_SEEDS (default the
# 3 record and 5 held-out seeds), GPU_SPEEDRUN_TIMEOUT s a run (default 60); more:
# "amx" the CPU bench meanwhile, AMX_TIMEOUT seconds at most, default 450 (the first AMX run needed
# ~420); "naive" the naive attention; "speedrun" issue 33's speedrun on the machine's
# CPU, every seed at once on two cores each (SPEEDRUN_TRACKS, default "cpu baby"; SPEEDRUN_SEEDS,
# default 3; SPEEDRUN_RECIPES, default ours; SPEEDRUN_TIMEOUT s, default 500), in a call of its
# own: its runs' logs come back in $OUT/speedrun_runs.tar.xz, for bench/speedrun_table.py here).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUNDLE=$ROOT/gpu_bundle
STEPS=${STEPS:-30}
PARTS=${PARTS:-tests w2 cpu gpt2 noepilogue gpuspeedrun multigpu nanogpt}
want() { [[ " $PARTS " == *" $1 "* ]]; }
mode=${1:-}

prepare() {
  set -e
  local build=${NANOGPT_BUILD_DIR:-$ROOT/build}
  grep -q 'NANOGPT_WITH_CUDA' "$build/CMakeCache.txt" 2>/dev/null || true
  [ -f "$build/build.ninja" ] || { echo "no build in $build: run scripts/setup.sh first" >&2; exit 1; }
  local extra=()
  grep -q "libnanogpt_nccl" "$build/build.ninja" 2>/dev/null && extra+=(test_distributed)
  ninja -C "$build" nanogpt test_cuda test_backends bench_kernels "${extra[@]}" || {
    echo "building test_cuda failed: is $build configured with the CUDA backend (nvcc found)?" >&2
    exit 1
  }
  rm -rf "$BUNDLE"; mkdir -p "$BUNDLE/stage/bin" "$BUNDLE/stage/lib" "$BUNDLE/data"
  cp "$build/nanogpt" "$build/test_cuda" "$build/test_backends" "$build/bench_kernels" "$BUNDLE/stage/bin/"
  local t
  for t in "${extra[@]}"; do cp "$build/$t" "$BUNDLE/stage/bin/"; done
  # Non-system libraries beside the binaries: everything ldd resolves except glibc's own and
  # CUDA's (the GPU machine has CUDA 13's; cuBLASLt alone is ~500 MB).
  ldd "$build/nanogpt" "$build/test_cuda" "$build/test_backends" "$build/bench_kernels" \
      "${extra[@]/#/$build/}" | awk '/=> \//{print $3}' | sort -u | while read -r lib; do
    case $(basename "$lib") in
      libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libcublas*|libcudart*|libcuda.so*|libnccl*) ;;
      *) cp -L "$lib" "$BUNDLE/stage/lib/" ;;
    esac
  done
  tar -C "$BUNDLE/stage" -cf - . | xz -9 -T2 > "$BUNDLE/nanogpt.tar.xz"
  rm -rf "$BUNDLE/stage"
  local text=${TEXT:-$ROOT/../shared/data/tinyshakespeare.txt}
  "$build/nanogpt" prepare --tokenizer=char --input="$text" --out_dir="$BUNDLE/data/shakespeare_char" >/dev/null
  "$build/nanogpt" prepare --tokenizer=gpt2 --input="$text" --out_dir="$BUNDLE/data/shakespeare_gpt2" >/dev/null
  cp "$text" "$BUNDLE/data/input.txt"
  # nanoGPT's own source (model.py, train.py, configurator.py, config/, data/).
  # shellcheck source=../bench/nanogpt_py_src.sh
  source "$ROOT/bench/nanogpt_py_src.sh"
  # (without it the bundle serves every part but nanogpt, which then says it is skipped)
  local rev
  if rev=$(prepare_nanogpt_py "$BUNDLE/nanogpt_py"); then
    echo "$rev" > "$BUNDLE/nanogpt_py/REVISION"
    rm -rf "$BUNDLE/nanogpt_py/assets" "$BUNDLE/nanogpt_py/"*.ipynb
  else
    rm -rf "$BUNDLE/nanogpt_py"
    echo "warning: no nanoGPT source in the bundle: the run's part nanogpt will be skipped" >&2
  fi
  du -sh "$BUNDLE"; ls -la "$BUNDLE"
}

# Peak GPU memory of a command: nvidia-smi sampled every 0.2 s in the background (MiB, all
# processes; the machine runs nothing else).
run_with_gpu_memory() {  # run_with_gpu_memory <memfile> <cmd...>
  local memfile=$1; shift
  local sampler=""
  if [ "$HAVE_GPU" = 1 ]; then
    ( while :; do nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits; sleep 0.2; done ) \
      > "$memfile" 2>/dev/null &
    sampler=$!
  fi
  "$@"; local rc=$?
  [ -n "$sampler" ] && kill "$sampler" 2>/dev/null
  return $rc
}

# ours_gpu <tag> <config> <dataset> <steps> [train args...]: our binary on the GPU, bf16, log in
# $OUT/<tag>.log, GPU memory sampled into $OUT/mem_<tag>.txt.
ours_gpu() {
  local tag=$1 config=$2 dataset=$3 steps=$4; shift 4
  run_with_gpu_memory "$OUT/mem_$tag.txt" timeout 90 "$NG" train "$config" --device=cuda \
    --dtype=bfloat16 --data_dir="$BUNDLE/data/$dataset" --out_dir="$WORK/$tag" \
    --always_save_checkpoint=False --eval_interval=100000 --eval_iters=2 --log_interval=1 \
    --max_iters="$steps" "$@" > "$OUT/$tag.log" 2>&1
  echo "exit $?"
  grep -E '^(compute|iter (0|1|10|'"$((steps-1))"'):|done|error)' "$OUT/$tag.log"
}

# two_ranks_on_the_gpu <tag> [train args...]: 2 ranks of our binary sharing the one GPU
# (torchrun-style variables, TCP rendezvous, each rank its own NCCL "host"), into $WORK/<tag>,
# logs $OUT/<tag>_rank<r>.log; prints which GPU each rank holds, the comm wait and any error.
two_ranks_on_the_gpu() {
  local tag=$1 r; shift
  for r in 0 1; do
    NANOGPT_SHARE_GPU=1 NCCL_HOSTID="nanogpt-rank-$r" NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 \
      RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 \
      MASTER_PORT=29517 timeout 180 "$NG" train "$@" --out_dir="$WORK/$tag" \
      > "$OUT/${tag}_rank$r.log" 2>&1 &
  done
  wait
  grep -h -E '^rank |ZeRO-1|comm wait|^error' "$OUT/${tag}_rank0.log" "$OUT/${tag}_rank1.log" | head -6
}

# compare_losses <name a> <out_dir a> <name b> <out_dir b>: the largest loss difference of two runs.
compare_losses() {
  python3 - "$@" <<'PY'
import json, sys
def losses(d):
    try:
        return [json.loads(l)["loss"] for l in open(d + "/metrics.jsonl") if '"loss"' in l]
    except OSError:
        return []
name_a, a, name_b, b = sys.argv[1], losses(sys.argv[2]), sys.argv[3], losses(sys.argv[4])
worst = max((abs(x - y) for x, y in zip(a, b)), default=float("nan"))
print(f"losses: {name_a} {len(a)}, {name_b} {len(b)} steps; largest |diff| over "
      f"{min(len(a), len(b))}: {worst:.2e}")
PY
}

# gpu_speedrun <track name> <tag> <config> <seed>: a speedrun recipe to its target on the GPU,
# log $OUT/gpu_speedrun_<tag>_<seed>.log; prints the exit status and the target's line.
gpu_speedrun() {
  local name=$1 tag=$2 config=$3 seed=$4
  echo "== speedrun, $name on the GPU, seed $seed"
  timeout "${GPU_SPEEDRUN_TIMEOUT:-60}" "$NG" train "$ROOT/config/$config" --device=cuda \
    --seed="$seed" --data_dir="$BUNDLE/data/shakespeare_char" \
    --out_dir="$WORK/gpu_speedrun_${tag}_$seed" --always_save_checkpoint=False \
    > "$OUT/gpu_speedrun_${tag}_$seed.log" 2>&1
  echo "exit $?"; grep -E 'target val loss|^done|error' "$OUT/gpu_speedrun_${tag}_$seed.log" | head -4
}

run() {
  OUT=${OUT:-/tmp/gpu_check_out}; mkdir -p "$OUT"
  WORK=/tmp/gpu_check_work; local work=$WORK; rm -rf "$work"; mkdir -p "$work/pkg"
  [ -f "$BUNDLE/nanogpt.tar.xz" ] || { echo "no $BUNDLE/nanogpt.tar.xz: run '$0 prepare' first" >&2; exit 1; }
  xz -dc "$BUNDLE/nanogpt.tar.xz" | tar -C "$work/pkg" -xf -
  local cudalibs
  cudalibs=$(find /usr/local/cuda*/ /opt/torch/.venv/lib/python3*/site-packages/nvidia -name 'libcublasLt.so.13' 2>/dev/null |
             xargs -r -n1 dirname | sort -u | tr '\n' ':')
  # NCCL is the machine's own (PyTorch's nvidia-nccl package; a 218 MB library is not carried):
  # nanogpt and test_distributed dlopen libnccl.so.2 from here when several ranks start.
  local nccl_dir
  nccl_dir=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null ||
             dirname "$(find / -name 'libnccl.so.2' 2>/dev/null | head -1)" 2>/dev/null)
  export LD_LIBRARY_PATH=$work/pkg/lib:${cudalibs}${nccl_dir:+$nccl_dir:}${LD_LIBRARY_PATH:-}
  NG=$work/pkg/bin/nanogpt; local TC=$work/pkg/bin/test_cuda
  HAVE_GPU=0; nvidia-smi -L >/dev/null 2>&1 && HAVE_GPU=1
  HAVE_TORCH=0; [ "$HAVE_GPU" = 1 ] && python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null && HAVE_TORCH=1
  {
    echo "== machine"; date -u
    [ "$HAVE_GPU" = 1 ] && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
    grep -m1 'model name' /proc/cpuinfo; nproc; grep -o 'amx_bf16\|avx512_bf16' /proc/cpuinfo | sort -u | tr '\n' ' '; echo
    "$NG" --version
  } 2>&1 | tee "$OUT/machine.txt"

  # Issue 30's CPU bench on this machine's own CPU, beside the GPU parts: pinned to the last two
  # cores, this shell (and so every GPU part, the CPU W2 run too) to the others.
  local amx_pid=""
  if want amx; then
    local ncpu; ncpu=$(nproc)
    if [ "$ncpu" -ge 4 ]; then
      echo "== issue 30's CPU bench (bench/run_amx_bench.sh) on cores $((ncpu - 2))-$((ncpu - 1)), in the background"
      ( cd "$ROOT" && taskset -c "$((ncpu - 2)),$((ncpu - 1))" env OMP_NUM_THREADS=2 NANOGPT="$NG" \
          BENCH_KERNELS="$work/pkg/bin/bench_kernels" TEXT="$BUNDLE/data/input.txt" TORCH2=0 \
          BENCH_WORK="$work/amx" timeout "${AMX_TIMEOUT:-450}" \
          bash bench/run_amx_bench.sh 3 "ways steps w4 profile" ) > "$OUT/amx_bench.txt" 2>&1 &
      amx_pid=$!
      taskset -pc "0-$((ncpu - 3))" $$ > /dev/null
    fi
  fi

  # Issue 33's speedrun on this machine's CPU (an AMX Xeon): its own call, nothing else running;
  # every seed's run at once, each pinned to its own two cores (bench/speedrun.sh PARALLEL).
  if want speedrun; then
    echo "== the speedrun (bench/speedrun.sh \"${SPEEDRUN_TRACKS:-cpu baby}\") on this CPU, $(($(nproc) / 2)) runs at once, 2 cores each"
    ( cd "$ROOT" && NANOGPT="$NG" TEXT="$BUNDLE/data/input.txt" PARALLEL=$(($(nproc) / 2)) \
        SEEDS=${SPEEDRUN_SEEDS:-3} RECIPES="${SPEEDRUN_RECIPES:-ours}" ABLATION=0 OUT="$work/speedrun" \
        DOC="$work/speedrun/speedrun.md" timeout "${SPEEDRUN_TIMEOUT:-500}" \
        bash bench/speedrun.sh "${SPEEDRUN_TRACKS:-cpu baby}" ) > "$OUT/speedrun.log" 2>&1
    echo "exit $?"; grep -E '^(==|wrote)' "$OUT/speedrun.log"
    grep -h -m1 '^compute:' "$work"/speedrun/*/runs/*/train.log "$work"/speedrun/*/parallel/s*/runs/*/train.log 2>/dev/null | head -1
    grep -H -E 'target val loss .* reached|^done:' "$work"/speedrun/*/runs/*/train.log \
      "$work"/speedrun/*/parallel/s*/runs/*/train.log 2>/dev/null |
      sed -e 's/, checkpoint .*//' -e 's|^.*/speedrun/||' | sort -u | head -60
    # every run's logs and metrics (no checkpoints) for bench/speedrun_table.py at home
    (cd "$work" && tar -cJf "$OUT/speedrun_runs.tar.xz" --exclude=ckpt speedrun)
  fi

  if want tests; then
    echo "== GPU tests (test_cuda)"
    NANOGPT_TEST_VERBOSE=1 timeout 150 "$TC" --gtest_filter="${TESTFILTER:-*}" \
      --gtest_output=xml:"$OUT/test_cuda.xml" > "$OUT/test_cuda.log" 2>&1
    local trc=$?
    grep -E '^\[  (PASSED|SKIPPED) *\] [0-9]+ tests?|^\[  FAILED  \]|tests? ran' "$OUT/test_cuda.log" | head -40
    grep -A12 'Failure$' "$OUT/test_cuda.log" | head -60
    grep -iE 'timing|TFLOP' "$OUT/test_cuda.log" | head -20
    echo "test_cuda exit status $trc"
    # The op harness (every op x dtype x shape on the reference, the CPU and the GPU, the support
    # matrix) and the whole model on the GPU against the CPU's (tests/backends).
    echo "== op harness and model on every backend (test_backends)"
    timeout 240 "$work/pkg/bin/test_backends" --gtest_output=xml:"$OUT/test_backends.xml" \
      > "$OUT/test_backends.log" 2>&1
    local brc=$?
    sed -n '/op harness support matrix/,/^\[/p' "$OUT/test_backends.log" | head -80
    grep -E '^\[  (PASSED|SKIPPED) *\] [0-9]+ tests?|^\[  FAILED  \]|NOT SUPPORTED' "$OUT/test_backends.log" | head -60
    grep -A8 'Failure$' "$OUT/test_backends.log" | head -60
    echo "test_backends exit status $brc"
    # The NCCL communicator (issue 54): two ranks as processes sharing this GPU, every collective
    # against hand-made sums, and a missing peer's timeout. NCCL is the machine's own (PyTorch's
    # nvidia-nccl package; a 218 MB library is not carried).
    if [ -x "$work/pkg/bin/test_distributed" ]; then
      echo "== NCCL communicator (test_distributed Nccl*), libnccl from ${nccl_dir:-nowhere}"
      timeout 90 "$work/pkg/bin/test_distributed" --gtest_filter='Nccl*' \
        > "$OUT/test_distributed.log" 2>&1
      echo "test_distributed exit status $?"
      grep -E '^\[  (PASSED|SKIPPED|FAILED) *\]|Failure|skip' "$OUT/test_distributed.log" | head -30
    fi
  fi

  local data=$BUNDLE/data
  local common=(--eval_interval=100000 --eval_iters=2 --log_interval=1 --max_iters="$STEPS")
  if want w2; then
  echo "== W2 (baby GPT) on the GPU, ours"
  run_with_gpu_memory "$OUT/mem_w2_ours.txt" timeout 90 "$NG" train "$ROOT/config/train_shakespeare_char.py" \
    --device=cuda --dtype=bfloat16 --data_dir="$data/shakespeare_char" --out_dir="$work/w2_gpu" \
    --always_save_checkpoint=True "${common[@]}" > "$OUT/w2_ours.log" 2>&1
  echo "exit $?"; grep -E '^(compute|iter (0|1|10|20|29|'"$((STEPS-1))"'):|done|error)' "$OUT/w2_ours.log"
  echo "== W2 checkpoint from the GPU resumed on the CPU for 2 steps"
  timeout 120 "$NG" train "$ROOT/config/train_shakespeare_char.py" --device=cpu --dtype=bfloat16 \
    --data_dir="$data/shakespeare_char" --out_dir="$work/w2_gpu" --init_from=resume \
    --eval_interval=100000 --eval_iters=2 --log_interval=1 --max_iters="$((STEPS + 2))" \
    > "$OUT/w2_gpu_to_cpu.log" 2>&1
  echo "exit $?"; grep -E '^(resumed|iter|done|error)' "$OUT/w2_gpu_to_cpu.log"
  echo "== sampling on the GPU from that checkpoint (KV cache), and on the CPU"
  for dev in cuda cpu; do
    timeout 60 "$NG" sample --device=$dev --out_dir="$work/w2_gpu" --num_samples=1 \
      --max_new_tokens=300 --seed=7 > "$OUT/sample_$dev.log" 2>&1
    echo "exit $?"; tail -c 300 "$OUT/sample_$dev.log"
  done
  echo "== W2 in float32 (TF32) on the GPU, 10 steps"
  ours_gpu w2_f32 "$ROOT/config/train_shakespeare_char.py" shakespeare_char 10 --dtype=float32
  fi
  if want cpu; then
  echo "== W2 on the CPU (the loss reference), bf16, all cores"
  timeout 300 "$NG" train "$ROOT/config/train_shakespeare_char.py" --device=cpu --dtype=bfloat16 \
    --data_dir="$data/shakespeare_char" --out_dir="$work/w2_cpu" --always_save_checkpoint=False \
    "${common[@]}" > "$OUT/w2_cpu.log" 2>&1
  echo "exit $?"; grep -E '^(compute|iter (0|'"$((STEPS-1))"'):|done|error)' "$OUT/w2_cpu.log"
  echo "== that CPU checkpoint resumed on the GPU for 2 steps"
  timeout 120 "$NG" train "$ROOT/config/train_shakespeare_char.py" --device=cuda --dtype=bfloat16 \
    --data_dir="$data/shakespeare_char" --out_dir="$work/w2_cpu" --init_from=resume \
    --eval_interval=100000 --eval_iters=2 --log_interval=1 --max_iters="$((STEPS + 2))" \
    > "$OUT/w2_cpu_to_gpu.log" 2>&1
  echo "exit $?"; grep -E '^(resumed|iter|done|error)' "$OUT/w2_cpu_to_gpu.log"
  fi
  if want gpt2; then
  echo "== GPT-2 124M, B 16, T 1024, bf16 on the GPU, ours (flash attention)"
  ours_gpu gpt2_ours "$ROOT/config/train_gpt2.py" shakespeare_gpt2 "$STEPS" \
    --batch_size=16 --gradient_accumulation_steps=1
  fi
  if want noepilogue; then
  echo "== the same with the MLP's GELU in its own kernels (NANOGPT_GPU_GELU_EPILOGUE=0)"
  NANOGPT_GPU_GELU_EPILOGUE=0 ours_gpu gpt2_noepi "$ROOT/config/train_gpt2.py" shakespeare_gpt2 \
    "$STEPS" --batch_size=16 --gradient_accumulation_steps=1
  fi
  if want naive; then
  echo "== the same with the naive attention (T x T probabilities, cuBLAS products)"
  ours_gpu w2_naive "$ROOT/config/train_shakespeare_char.py" shakespeare_char "$STEPS" --attention=naive
  ours_gpu gpt2_naive "$ROOT/config/train_gpt2.py" shakespeare_gpt2 "$STEPS" \
    --batch_size=16 --gradient_accumulation_steps=1 --attention=naive
  fi
  if want multigpu; then
  # Issue 54 on the one lent GPU: 2 ranks sharing it (torchrun-style variables, TCP rendezvous;
  # NCCL 2.28 refuses two ranks on one GPU unless each is its own "host": NCCL_HOSTID per rank,
  # no P2P or shared memory) must give the losses of 1 rank with twice the accumulation, and
  # ZeRO-1 on the same 2 ranks those of plain data parallelism, for AdamW and Muon, bfloat16 and
  # float32.
  local opt dt
  for opt in adamw muon; do
    for dt in bfloat16 float32; do
      local tag=dp_${opt}_${dt} mg=(--device=cuda --dtype=$dt --optimizer=$opt
        --data_dir="$data/shakespeare_char" --n_layer=2 --n_head=2 --n_embd=128 --block_size=64
        --batch_size=8 --max_iters=8 --eval_interval=4 --eval_iters=2 --log_interval=1
        --warmup_iters=0 --learning_rate=3e-3 --dropout=0 --always_save_checkpoint=False
        --gradient_accumulation_steps=4)
      echo "== 2 ranks on one GPU vs 1 rank with twice the accumulation: $opt, $dt"
      timeout 120 "$NG" train "${mg[@]}" --out_dir="$work/${tag}_1" > "$OUT/${tag}_1.log" 2>&1
      echo "1 rank: exit $?"
      two_ranks_on_the_gpu "${tag}_2" "${mg[@]}"
      compare_losses "1 rank" "$work/${tag}_1" "2 ranks" "$work/${tag}_2"
      echo "== ZeRO-1 on the 2 ranks vs plain data parallelism: $opt, $dt"
      two_ranks_on_the_gpu "${tag}_2z" "${mg[@]}" --zero_stage=1
      compare_losses "2 ranks" "$work/${tag}_2" "ZeRO-1" "$work/${tag}_2z"
    done
  done
  fi

  if want gpuspeedrun; then
  # Issue 52: both speedrun recipes on the GPU through the one trainer, to their targets on the
  # whole validation split (their configs' target_loss, stop_at_target), the record seeds and the
  # held-out ones (the CPU recipe's heads of 32: kernels/cuda/attention_any_head.cu in bfloat16).
  local seed
  for seed in ${GPU_SPEEDRUN_SEEDS:-1337 1338 1339 9001 9002 9003 9004 9005}; do
    gpu_speedrun "baby-GPT track (1.47)" baby speedrun_shakespeare_char.py "$seed"
    gpu_speedrun "CPU track (1.88)" cpu speedrun_shakespeare_char_cpu.py "$seed"
  done
  fi

  if want nanogpt && [ "$HAVE_TORCH" = 1 ] && [ -d "$BUNDLE/nanogpt_py" ]; then
    local ng=$work/nanogpt_py; cp -r "$BUNDLE/nanogpt_py" "$ng"
    sed -i "s/torch.cuda.amp.GradScaler(enabled=(dtype == 'float16'))/torch.amp.GradScaler('cuda', enabled=(dtype == 'float16'))/" "$ng/train.py"
    cp "$data/input.txt" "$ng/data/shakespeare_char/input.txt"
    (cd "$ng/data/shakespeare_char" && python3 prepare.py > /dev/null)
    mkdir -p "$ng/data/shakespeare"; cp "$data/shakespeare_gpt2/"{train,val}.bin "$ng/data/shakespeare/"
    local ngcommon=(--eval_interval=100000 --eval_iters=2 --log_interval=1 --max_iters="$STEPS"
                    --compile=True --dtype=bfloat16 --always_save_checkpoint=False)
    echo "== W2 on the GPU, nanoGPT (compile, bf16)"
    (cd "$ng" && PYTHONUNBUFFERED=1 run_with_gpu_memory "$OUT/mem_w2_nanogpt.txt" timeout 120 \
       python3 train.py config/train_shakespeare_char.py --out_dir=/tmp/ng_w2 "${ngcommon[@]}") \
      > "$OUT/w2_nanogpt.log" 2>&1
    echo "exit $?"; grep -E '^iter (0|1|10|'"$((STEPS-1))"'):|Error' "$OUT/w2_nanogpt.log"
    echo "== GPT-2 124M B 16 T 1024 on the GPU, nanoGPT (compile, bf16)"
    (cd "$ng" && PYTHONUNBUFFERED=1 run_with_gpu_memory "$OUT/mem_gpt2_nanogpt.txt" timeout 150 \
       python3 train.py --dataset=shakespeare --batch_size=16 --block_size=1024 \
       --gradient_accumulation_steps=1 --out_dir=/tmp/ng_gpt2 "${ngcommon[@]}") \
      > "$OUT/gpt2_nanogpt.log" 2>&1
    echo "exit $?"; grep -E '^iter (0|1|10|'"$((STEPS-1))"'):|Error' "$OUT/gpt2_nanogpt.log"
  else
    echo "== nanoGPT skipped (not in PARTS, no GPU with PyTorch here, or no nanoGPT source in the bundle)"
  fi
  if [ -n "$amx_pid" ]; then
    echo "== issue 30's CPU bench (waiting for it)"
    wait "$amx_pid"; echo "exit $?"
    cat "$OUT/amx_bench.txt"
  fi
  python3 "$ROOT/scripts/gpu_check_table.py" "$OUT" "$STEPS" | tee "$OUT/gpu_check.md"
  # The device tool returns at most 8 files: every log in one archive, the table and the tests'
  # log beside it.
  (cd "$OUT" && tar -czf gpu_check_logs.tgz --exclude=gpu_check_logs.tgz \
     --exclude=speedrun_runs.tar.xz ./* &&
     find . -maxdepth 1 -type f ! -name gpu_check_logs.tgz ! -name gpu_check.md \
       ! -name test_cuda.log ! -name test_backends.log ! -name test_distributed.log ! -name run.log ! -name amx_bench.txt ! -name 'speedrun*' -delete)
}

case $mode in
  prepare) prepare ;;
  run) run ;;
  *) echo "usage: $0 prepare | run   (see the comment at the top)" >&2; exit 2 ;;
esac
