# Sourced by bench/run_torch2_peer_bench.sh: puts a copy of Karpathy's nanoGPT (public source,
# fetched at bench time, never committed) in a bench work folder, with one line changed so that
# `--dtype=bfloat16` takes effect on CPU: stock train.py uses nullcontext() whenever
# device_type == 'cpu', ignoring dtype; the copy runs torch.autocast unless dtype is float32.
# Source, first found: $NANOGPT_PY_SRC (a checkout), else the bare git directory $NANOGPT_PY_GIT
# (default /work/.mirror/karpathy+nanoGPT/repo), extracted with `git archive HEAD`.
# prepare_nanogpt_py DEST: DEST/{train.py,model.py,configurator.py,data/...}, patched; prints the
# source's commit (or "checkout") on stdout. Fails loudly if the line to change is not there.
prepare_nanogpt_py() {
  local dest=$1 git=${NANOGPT_PY_GIT:-/work/.mirror/karpathy+nanoGPT/repo} rev
  rm -rf "$dest"; mkdir -p "$dest"
  if [ -n "${NANOGPT_PY_SRC:-}" ]; then
    [ -f "$NANOGPT_PY_SRC/train.py" ] || { echo "NANOGPT_PY_SRC=$NANOGPT_PY_SRC has no train.py" >&2; return 1; }
    cp -r "$NANOGPT_PY_SRC/." "$dest/"; rm -rf "$dest/.git"
    rev=$(git -C "$NANOGPT_PY_SRC" rev-parse --short HEAD 2>/dev/null || echo checkout)
  elif git --git-dir="$git" rev-parse --verify -q HEAD >/dev/null 2>&1; then
    git --git-dir="$git" archive HEAD | tar -x -C "$dest"
    rev=$(git --git-dir="$git" rev-parse --short HEAD)
  else
    echo "no nanoGPT source: set NANOGPT_PY_SRC to a checkout of https://github.com/karpathy/nanoGPT" \
         "(or NANOGPT_PY_GIT to a bare clone)" >&2
    return 1
  fi
  local from="ctx = nullcontext() if device_type == 'cpu' else" to="ctx = nullcontext() if dtype == 'float32' else"
  grep -qF "$from" "$dest/train.py" ||
    { echo "nanoGPT's train.py ($rev) lacks the line to patch: '$from'" >&2; return 1; }
  sed -i "s/$from/$to/" "$dest/train.py"
  grep -qF "$to" "$dest/train.py" || { echo "patching nanoGPT's train.py failed" >&2; return 1; }
  echo "$rev"
}
