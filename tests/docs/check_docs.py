#!/usr/bin/env python3
"""The docs test (CTest: docs_commands): every command of README.md and docs/guide/*.md is checked.

- Every ```sh / ```bash block is read command by command. A `nanogpt` command must name a
  subcommand the binary has, and each of its `--key`s must be one the binary lists for that
  subcommand (`nanogpt help <command>`), so a renamed key breaks this test; its config files, and
  the keys assigned in them, must exist too. `bash X` / `python3 X` need the script X, `cmake` /
  `ctest` presets must be in CMakePresets.json, and mpirun's nanogpt command is checked as above.
- Blocks placed right after the line `<!-- docs-test: run -->` are run, in order, in a temporary
  directory (build/nanogpt, config/ and ../shared/data/tinyshakespeare.txt linked in), with
  overrides that make them cheap (a few training steps, short samples).
- The README's set-up section holds exactly the two set-up commands.
- The README's table "What runs where" agrees with the GPU trainer's refusals: the conditions of
  check_cuda_training_config in src/gpu/cuda_training.cpp are read from the source (every build), and
  where the binary has the CUDA backend each row's keys are also run with --device=cuda (the
  refusal comes before any GPU is touched, so this works on machines without one).

usage: check_docs.py --binary build/nanogpt [--source DIR] [--shared DIR] [--static-only] [--keep]
"""

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

RUN_MARK = "<!-- docs-test: run -->"
SETUP_HEADING = "## Set-up on a fresh Debian 12 machine"
SETUP_COMMANDS = ["bash scripts/quickstart.sh", "bash scripts/test.sh"]
TABLE_HEADING = "## What runs where"
GPU_SOURCE = "src/gpu/cuda_training.cpp"
GPU_FUNCTION = "check_cuda_training_config"
# Commands whose keys are train's too (estimate, autotune and sweep pass them on to training).
TRAIN_LIKE = {"train", "estimate", "autotune", "sweep"}
# Appended to the commands of run blocks so that they finish in seconds (the last value wins).
CHEAP = {
    "train": ["--max_iters=4", "--lr_decay_iters=4", "--warmup_iters=1", "--eval_interval=2",
              "--eval_iters=1", "--log_interval=1"],
    "sample": ["--num_samples=1", "--max_new_tokens=16"],
    "estimate": ["--measure_peak=False"],
    "autotune": ["--timed_steps=1"],
    "sweep": ["--max_iters=4", "--lr_decay_iters=4", "--eval_interval=2", "--eval_iters=1"],
}

errors = []


def error(where, text):
    errors.append(f"{where}: {text}")


# ---------------------------------------------------------------------------------------------
# Reading the documents


def doc_files(source):
    files = [os.path.join(source, "README.md")]
    guide = os.path.join(source, "docs", "guide")
    if os.path.isdir(guide):
        files += sorted(os.path.join(guide, f) for f in os.listdir(guide) if f.endswith(".md"))
    return files


def shell_blocks(path):
    """(first line number, text, run?) of each ```sh / ```bash block."""
    blocks = []
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"^```(\w*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        lang, start = m.group(1), i
        i += 1
        body = []
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        i += 1
        if lang not in ("sh", "bash"):
            continue
        prev = start - 1
        while prev >= 0 and not lines[prev].strip():
            prev -= 1
        run = prev >= 0 and lines[prev].strip() == RUN_MARK
        blocks.append((start + 2, "\n".join(body), run))
    return blocks


def commands_of(block_text):
    """The commands of a block as token lists: comments dropped, continuations joined, split at
    && ; and |."""
    joined = re.sub(r"\\\n", " ", block_text)
    commands = []
    for line in joined.split("\n"):
        try:
            lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
            lexer.whitespace_split = True
            lexer.commenters = "#"
            tokens = list(lexer)
        except ValueError as e:
            commands.append(("unparsable", [line, str(e)]))
            continue
        current = []
        for t in tokens:
            if t in ("&&", ";", "|", "||", "&"):
                if current:
                    commands.append(("ok", current))
                current = []
            else:
                current.append(t)
        if current:
            commands.append(("ok", current))
    return commands


def split_env(tokens):
    env = {}
    while tokens and re.match(r"^[A-Z_][A-Z0-9_]*=", tokens[0]):
        k, v = tokens[0].split("=", 1)
        env[k] = v
        tokens = tokens[1:]
    return env, tokens


# ---------------------------------------------------------------------------------------------
# What the binary knows


def run_binary(binary, args, cwd=None, timeout=120, env=None):
    full_env = dict(os.environ)
    full_env.setdefault("OMP_NUM_THREADS", "2")
    if env:
        full_env.update(env)
    p = subprocess.run([binary] + args, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                       env=full_env)
    return p.returncode, p.stdout + p.stderr


def binary_commands(binary):
    _, usage = run_binary(binary, ["--help"])
    names = []
    in_list = False
    for line in usage.split("\n"):
        if line.strip() == "commands:":
            in_list = True
            continue
        if in_list:
            m = re.match(r"^  (\w+)\s", line)
            if not m:
                break
            names.append(m.group(1))
    if not names:
        sys.exit(f"check_docs: `{binary} --help` listed no commands:\n{usage}")
    return names


def binary_keys(binary, commands):
    """For each subcommand, the --keys its help text names (train's keys too where it passes them
    on)."""
    keys = {}
    for c in commands:
        rc, text = run_binary(binary, ["help", c])
        if rc != 0:
            sys.exit(f"check_docs: `nanogpt help {c}` failed:\n{text}")
        keys[c] = set(re.findall(r"--([a-z][a-z0-9_]*)", text)) | {"help"}
    for c in TRAIN_LIKE & set(commands):
        keys[c] |= keys["train"]
    return keys


def config_keys(path):
    keys = []
    for line in open(path, encoding="utf-8"):
        m = re.match(r"^([A-Za-z_]\w*)\s*=", line)
        if m:
            keys.append(m.group(1))
    return keys


# ---------------------------------------------------------------------------------------------
# Static checks of one command


def check_nanogpt(where, args, ctx):
    if not args:
        error(where, "`nanogpt` without a command")
        return
    sub, rest = args[0], args[1:]
    if sub in ("--version", "version", "--help", "-h"):
        return
    if sub == "help":
        for name in rest:
            if name not in ctx["commands"]:
                error(where, f"`nanogpt help {name}`: no such command")
        return
    if sub not in ctx["commands"]:
        error(where, f"`nanogpt {sub}`: no such command (the binary has {ctx['commands']})")
        return
    keys = ctx["keys"][sub]
    positional = 0
    for a in rest:
        if a.startswith("--"):
            key = a[2:].split("=", 1)[0]
            if key not in keys:
                error(where, f"`nanogpt {sub} --{key}`: `nanogpt help {sub}` has no key --{key}")
            continue
        positional += 1
        if sub == "report":
            continue
        config = a
        if config.startswith("~/.local/share/nanogpt/config/"):
            config = "config/" + config.split("/config/", 1)[1]
        path = os.path.join(ctx["source"], config)
        if not os.path.isfile(path):
            error(where, f"`nanogpt {sub} {a}`: no config file {config} in the source tree")
            continue
        if sub in ("train", "estimate", "autotune"):
            for key in config_keys(path):
                if key not in ctx["keys"]["train"]:
                    error(where, f"{config} assigns {key}, which `nanogpt help train` does not list")


def check_command(where, tokens, ctx):
    env, tokens = split_env(tokens)
    if not tokens:
        return
    if "NANOGPT_CPU_TARGET" in env and not env["NANOGPT_CPU_TARGET"]:
        error(where, "empty NANOGPT_CPU_TARGET")
    word = tokens[0]
    if os.path.basename(word) == "nanogpt":
        check_nanogpt(where, tokens[1:], ctx)
    elif word == "mpirun":
        inner = [i for i, t in enumerate(tokens) if os.path.basename(t) == "nanogpt"]
        if not inner:
            error(where, "mpirun without a nanogpt command")
        else:
            check_nanogpt(where, tokens[inner[0] + 1:], ctx)
    elif word in ("bash", "python3"):
        if len(tokens) < 2 or not os.path.isfile(os.path.join(ctx["source"], tokens[1])):
            error(where, f"`{' '.join(tokens[:2])}`: no such script in the source tree")
    elif word in ("cmake", "ctest"):
        for i, t in enumerate(tokens):
            preset = None
            if t == "--preset" and i + 1 < len(tokens):
                preset = tokens[i + 1]
            elif t.startswith("--preset="):
                preset = t.split("=", 1)[1]
            if preset is not None:
                for p in preset.split("|"):
                    if p not in ctx["presets"]:
                        error(where, f"`{word} --preset {p}`: no such preset in CMakePresets.json")
    else:
        error(where, f"`{' '.join(tokens)}`: tests/docs/check_docs.py does not know how to check "
                     f"a `{word}` command; teach it or leave it out of the docs")


def presets(source):
    names = set()
    try:
        data = json.load(open(os.path.join(source, "CMakePresets.json"), encoding="utf-8"))
    except OSError:
        return names
    for kind in ("configurePresets", "buildPresets", "testPresets"):
        for p in data.get(kind, []):
            names.add(p["name"])
    return names


# ---------------------------------------------------------------------------------------------
# Running the tour


def make_workdir(tmp, binary, source, shared):
    work = os.path.join(tmp, "work")
    os.makedirs(os.path.join(work, "build"))
    os.symlink(os.path.abspath(binary), os.path.join(work, "build", "nanogpt"))
    os.symlink(os.path.join(source, "config"), os.path.join(work, "config"))
    data = os.path.join(tmp, "shared", "data")
    os.makedirs(data)
    corpus = os.path.join(shared, "data", "tinyshakespeare.txt")
    if not os.path.isfile(corpus):
        sys.exit(f"check_docs: the test corpus {corpus} is missing")
    os.symlink(corpus, os.path.join(data, "tinyshakespeare.txt"))
    return work


def run_block(where, text, work, binary, timeout):
    for status, tokens in commands_of(text):
        if status != "ok":
            continue
        env, tokens = split_env(tokens)
        if not tokens or os.path.basename(tokens[0]) != "nanogpt":
            error(where, f"a run block may hold only nanogpt commands, not `{' '.join(tokens)}`")
            continue
        sub = tokens[1] if len(tokens) > 1 else ""
        args = tokens[1:] + CHEAP.get(sub, [])
        shown = " ".join(tokens)
        print(f"  run: {shown}", flush=True)
        try:
            rc, out = run_binary(binary, args, cwd=work, timeout=timeout, env=env)
        except subprocess.TimeoutExpired:
            error(where, f"`{shown}` ran past {timeout} s")
            return
        if rc != 0:
            tail = "\n".join(out.strip().split("\n")[-15:])
            error(where, f"`{shown}` exited with {rc} (with {' '.join(CHEAP.get(sub, []))}):\n{tail}")
            return  # the next commands depend on this one


# ---------------------------------------------------------------------------------------------
# The README's set-up commands


def check_setup(readme):
    text = open(readme, encoding="utf-8").read()
    if SETUP_HEADING not in text:
        error("README.md", f"no section '{SETUP_HEADING}'")
        return
    section = text.split(SETUP_HEADING, 1)[1].split("\n## ", 1)[0]
    found = []
    for body in re.findall(r"```(?:sh|bash)\n(.*?)```", section, re.S):
        found += [" ".join(t) for s, t in commands_of(body) if s == "ok"]
    if found != SETUP_COMMANDS:
        error("README.md", f"the set-up section must hold exactly {SETUP_COMMANDS}, holds {found}")


# ---------------------------------------------------------------------------------------------
# The device x feature table against the GPU trainer


def function_body(text, name):
    m = re.search(r"\bvoid\s+" + name + r"\s*\([^)]*\)\s*\{", text)
    if not m:
        return None
    depth, i = 1, m.end()
    while i < len(text) and depth:
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        i += 1
    return text[m.end():i - 1]


def gpu_refusals(source):
    """The refusal conditions: a list of (key, op, literal) from `if (c.<...>.key op literal)` or
    (key, 'true', None) from `if (c.<...>.key)`, and whether more than one GPU is refused."""
    path = os.path.join(source, GPU_SOURCE)
    text = open(path, encoding="utf-8").read()
    body = function_body(text, GPU_FUNCTION)
    if body is None:
        error(GPU_SOURCE, f"no function {GPU_FUNCTION}: update tests/docs/check_docs.py to where "
                          "the GPU's refusals live now")
        return [], False
    conditions = []
    for cond in re.findall(r"\bif\s*\((.*?)\)\s*(?:\{|refuse)", body, re.S):
        if "&&" in cond:
            error(GPU_SOURCE, f"condition `{cond}` has &&: teach tests/docs/check_docs.py")
        for part in cond.split("||"):
            part = part.strip()
            m = re.fullmatch(r"c\.(?:\w+\.)*(\w+)\s*(==|!=|>=|<=|>|<)\s*(\"[^\"]*\"|-?[\d.]+)", part)
            if m:
                conditions.append((m.group(1), m.group(2), m.group(3)))
                continue
            m = re.fullmatch(r"c\.(?:\w+\.)*(\w+)", part)
            if m:
                conditions.append((m.group(1), "true", None))
                continue
            error(GPU_SOURCE, f"condition `{part}` of {GPU_FUNCTION}: tests/docs/check_docs.py "
                              "cannot read it; teach it")
    multi_gpu = "several GPUs" in text
    return conditions, multi_gpu


def literal_value(text):
    if text.startswith('"'):
        return text.strip('"')
    if text in ("True", "False"):
        return text == "True"
    try:
        return float(text)
    except ValueError:
        return text.strip("'\"")


def triggers(condition, args):
    key, op, lit = condition
    if key not in args:
        return False
    value = literal_value(args[key])
    if op == "true":
        return value is True or (isinstance(value, float) and value != 0)
    want = literal_value(lit)
    if isinstance(want, float) != isinstance(value, float):
        return op == "!="
    return {"==": value == want, "!=": value != want, ">": value > want, "<": value < want,
            ">=": value >= want, "<=": value <= want}[op]


def device_table(readme):
    text = open(readme, encoding="utf-8").read()
    if TABLE_HEADING not in text:
        error("README.md", f"no section '{TABLE_HEADING}'")
        return []
    section = text.split(TABLE_HEADING, 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.split("\n"):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) != 4 or cells[0] in ("feature",) or \
                set(cells[0]) <= set("-: "):
            continue
        spans = re.findall(r"`([^`]+)`", cells[1])
        rows.append({"feature": cells[0], "spans": spans, "cpu": cells[2], "gpu": cells[3]})
    if not rows:
        error("README.md", "the table 'What runs where' has no rows")
    return rows


def span_args(span):
    args = {}
    for t in span.split():
        if t.startswith("--"):
            k, _, v = t[2:].partition("=")
            args[k] = v
    return args


def check_device_table(readme, ctx, work):
    rows = device_table(readme)
    conditions, multi_gpu = gpu_refusals(ctx["source"])
    used = set()
    train_keys = ctx["keys"]["train"]
    for key, _, _ in conditions:
        if key not in train_keys:
            error(GPU_SOURCE, f"{GPU_FUNCTION} tests the field {key}, which is no train key "
                              "(a field renamed? the table names keys)")
    for row in rows:
        where = f"README.md table '{TABLE_HEADING[3:]}', row '{row['feature']}'"
        refused = row["gpu"].lower().startswith("refused")
        if row["gpu"].lower() not in ("yes", "yes¹", "refused") and not refused:
            error(where, f"GPU cell '{row['gpu']}': expected 'yes', 'yes¹' or 'refused'")
        if row["cpu"].lower() != "yes":
            error(where, f"CPU cell '{row['cpu']}': expected 'yes'")
        if not row["spans"]:
            error(where, "no keys in backticks")
        for span in row["spans"]:
            if span.startswith("mpirun"):
                if refused != multi_gpu:
                    error(where, f"says {row['gpu']} but {GPU_SOURCE} "
                                 f"{'refuses' if multi_gpu else 'no longer refuses'} several GPUs")
                continue
            args = span_args(span)
            if not args:
                error(where, f"`{span}`: no --key=value")
            for k in args:
                if k not in train_keys:
                    error(where, f"`--{k}`: `nanogpt help train` has no key --{k}")
            hit = [c for c in conditions if triggers(c, args)]
            used.update(hit)
            if refused and not hit:
                error(where, f"says refused, but no condition of {GPU_FUNCTION} refuses `{span}` "
                             "(the GPU runs it now? then write yes)")
            if not refused and hit:
                error(where, f"says yes, but {GPU_FUNCTION} refuses `{span}` ({hit[0][0]})")
            if ctx["cuda_binary"]:
                runtime_check(where, span, refused, ctx, work)
    for c in conditions:
        if c not in used:
            error("README.md", f"{GPU_FUNCTION} refuses {c[0]} ({c[0]} {c[1]} {c[2]}) but no "
                               f"'refused' row of the table '{TABLE_HEADING[3:]}' says so")


TINY_GPU = ["--dataset=docs_test_no_such_dataset", "--out_dir=out-docs-gpu", "--n_layer=2",
            "--n_head=1", "--n_embd=64", "--block_size=256", "--batch_size=2", "--max_iters=1",
            "--eval_iters=1", "--dtype=bfloat16"]


def runtime_check(where, span, refused, ctx, work):
    args = ["train", "--device=cuda"] + TINY_GPU + span.split()
    rc, out = run_binary(ctx["binary"], args, cwd=work, timeout=120)
    said_refused = "--device=cuda does not run" in out
    if "effective config:" not in out:
        error(where, f"`nanogpt train --device=cuda {span}` stopped before training started "
                     f"(not a refusal):\n{out.strip()[-600:]}")
    elif refused and not said_refused:
        error(where, f"says refused, but `nanogpt train --device=cuda {span}` was not refused:\n"
                     f"{out.strip()[-600:]}")
    elif not refused and said_refused:
        error(where, f"says yes, but `nanogpt train --device=cuda {span}` is refused:\n"
                     f"{out.strip()[-600:]}")


def has_cuda_backend(binary, work):
    _, out = run_binary(binary, ["train", "--device=cuda"] + TINY_GPU, cwd=work, timeout=120)
    return "built without the CUDA backend" not in out


# ---------------------------------------------------------------------------------------------


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--binary", required=True)
    ap.add_argument("--source", default=os.path.dirname(os.path.dirname(here)))
    ap.add_argument("--shared", default=None, help="the shared folder with data/tinyshakespeare.txt")
    ap.add_argument("--static-only", action="store_true", help="check, but run no block")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per run command")
    opts = ap.parse_args()
    source = os.path.abspath(opts.source)
    shared = os.path.abspath(opts.shared or os.path.join(source, "..", "shared"))
    binary = os.path.abspath(opts.binary)
    if not os.path.isfile(binary):
        sys.exit(f"check_docs: no binary {binary} (build it first)")

    commands = binary_commands(binary)
    ctx = {"binary": binary, "source": source, "commands": commands,
           "keys": binary_keys(binary, commands), "presets": presets(source)}
    tmp = tempfile.mkdtemp(prefix="nanogpt-docs-")
    try:
        work = make_workdir(tmp, binary, source, shared)
        n_commands = n_run = 0
        to_run = []
        for path in doc_files(source):
            rel = os.path.relpath(path, source)
            for line, text, run in shell_blocks(path):
                for status, tokens in commands_of(text):
                    where = f"{rel}:{line}"
                    if status != "ok":
                        error(where, f"cannot parse `{tokens[0]}`: {tokens[1]}")
                        continue
                    n_commands += 1
                    check_command(where, tokens, ctx)
                if run:
                    to_run.append((f"{rel}:{line}", text))
        check_setup(os.path.join(source, "README.md"))
        ctx["cuda_binary"] = has_cuda_backend(binary, work)
        check_device_table(os.path.join(source, "README.md"), ctx, work)
        print(f"checked {n_commands} commands in {len(doc_files(source))} files; device table "
              f"{'run with --device=cuda and ' if ctx['cuda_binary'] else ''}read against "
              f"{GPU_SOURCE}", flush=True)
        if not opts.static_only:
            for where, text in to_run:
                print(f"{where}: running the block", flush=True)
                run_block(where, text, work, binary, opts.timeout)
                n_run += 1
            print(f"ran {n_run} blocks", flush=True)
    finally:
        if opts.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    if errors:
        print(f"\n{len(errors)} problem(s) in the documentation's commands:", file=sys.stderr)
        for e in errors:
            print(f"- {e}", file=sys.stderr)
        return 1
    print("docs: every command checked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
