"""Writes docs/speedrun.md from bench/speedrun.sh's sweeps (see that script).

Usage: python3 bench/speedrun_table.py OUT DOC VERSION COMMAND
Reads OUT/<track>-<recipe>/runs/<model>.<optim>.s<seed>/{metrics.jsonl, train.log}: the
time-to-target record of each run ("target_loss", "reached", "target_iter", "tokens", "wall_s",
"eval_s", "best_full_val_loss"), the wall time of its last whole-split evaluation, and from the
log the `compute:` line (CPU and measured peaks) and the run's max_iters.
"""
import datetime
import glob
import json
import os
import re
import statistics
import sys

# track: (title, target loss, nanoGPT's config, ours, issue 33's wall-time goal for ours in s;
# issue 19's were 10 s and 15 min, the goal cells of the rows measured before 2026-11-27)
TRACKS = {
    "cpu": ("CPU recipe, char tinyshakespeare", 1.88, "config/train_shakespeare_char_cpu.py",
            "config/speedrun_shakespeare_char_cpu.py", 3),
    "baby": ("baby GPT, char tinyshakespeare", 1.47, "config/train_shakespeare_char.py",
             "config/speedrun_shakespeare_char.py", 5 * 60),
}
ABLATION_TEXT = {
    "no_muon": "AdamW for every tensor (Muon off)",
    "no_rotary": "learned positions (rotary off)",
    "no_qk_norm": "QK-norm off",
    "no_qk_norm_gain": "QK-norm's queries at gain 1 (qk_norm_gain off)",
    "no_relu2": "GELU (ReLU² off)",
    "no_rmsnorm": "LayerNorm (RMSNorm off)",
    "tied_head": "head tied to wte (untied head off)",
    "untied_head": "head apart from wte (tied head off)",
    "no_zero_init": "nanoGPT's init of the projections (zero init off)",
    "no_softcap": "plain logits (soft-cap off)",
    "cosine_schedule": "warmup + cosine (warmup-stable-decay off)",
    "wsd_schedule": "warmup-stable-decay, 40% 1-sqrt cooldown (cosine off)",
    "no_context_warmup": "block_size from the start (sequence-length warmup off)",
    "no_own_rates": "learning_rate for embeddings and head (their own rates off)",
    "no_unet_skips": "a plain stack (U-net skips off)",
    "no_attn_gain": "attention branches without a learned gain (attn_gain off)",
    "no_ema": "evaluations on the trained weights (their moving average off)",
    "attn_dropout_on": "dropout on the attention weights too (attn_dropout = dropout)",
}


def run_records(sweep_dir):
    """{model: [record per seed]} of one sweep."""
    out = {}
    for run in sorted(glob.glob(os.path.join(sweep_dir, "runs", "*"))):
        name = os.path.basename(run)
        model = name.split(".")[0]
        rec, last_eval_s, evals = None, None, []
        path = os.path.join(run, "metrics.jsonl")
        if os.path.exists(path):
            with open(path) as f:
                for line in f:
                    j = json.loads(line)
                    if "target_loss" in j and "reached" in j:
                        rec = j
                    elif "full_val_loss" in j:
                        last_eval_s = j.get("elapsed_s")
                        evals.append(j)
        max_iters = max_iters_in(os.path.join(run, "train.log"))
        best = min((e["full_val_loss"] for e in evals), default=None)
        if rec is None and evals:  # killed before its end (a bench's time limit): not reached
            rec = {"reached": False, "cut_off_iter": evals[-1]["iter"], "best_full_val_loss": best}
        elif rec is not None and not rec.get("reached") and max_iters and \
                rec.get("iter", max_iters) < max_iters:  # stopped by a signal before its end
            rec["cut_off_iter"] = rec["iter"]
        if rec is None:
            continue
        rec["seed"] = name.rsplit(".s", 1)[-1]
        rec["ran_s"] = last_eval_s  # wall time at the run's last whole-split evaluation
        rec["max_iters"] = max_iters
        out.setdefault(model, []).append(rec)
    return out


def max_iters_in(path):
    """The first `max_iters = N` line's N in a file (a run's train.log, which prints its config, or
    a config file), or None if the file or the line is absent."""
    if os.path.exists(path):
        with open(path, errors="replace") as f:
            for line in f:
                m = re.match(r"max_iters\s*=\s*(\d+)", line)
                if m:
                    return int(m.group(1))
    return None


def compute_line(out_dir, model="*"):
    """The `compute:` line (CPU, ISA, measured peaks) of the first run log under out_dir (a sweep's
    folder or the bench's), of the runs of `model` (a sweep's model name) where given."""
    logs = glob.glob(os.path.join(out_dir, "runs", f"{model}.*", "train.log")) + \
        glob.glob(os.path.join(out_dir, "*", "runs", f"{model}.*", "train.log"))
    for log in sorted(logs):
        with open(log, errors="replace") as f:
            for line in f:
                if line.startswith("compute:"):
                    return line[len("compute:"):].strip()
    return "(no run log found)"


def mean_std(values, fmt):
    if not values:
        return "—"
    if len(values) == 1:
        return fmt.format(values[0])
    return (fmt + " ± " + fmt).format(statistics.mean(values), statistics.stdev(values))


def summary(recs):
    """(reached k/n, wall, tokens, eval, iters, best) cells over the seeds."""
    reached = [r for r in recs if r.get("reached")]
    wall = [r["wall_s"] for r in reached]
    tokens = [r["tokens"] for r in reached]
    # minutes and millions where seconds and thousands get long (the baby track)
    minutes = wall and statistics.mean(wall) >= 300
    millions = tokens and statistics.mean(tokens) >= 1e6
    wall_cell = mean_std([w / 60 for w in wall], "{:.1f} min") if minutes else mean_std(wall, "{:.1f} s")
    ran = [r["ran_s"] for r in recs if r.get("ran_s") is not None]
    if not reached and ran:  # how long the runs went without reaching it
        wall_cell = "— (ran " + (mean_std([w / 60 for w in ran], "{:.1f} min")
                                 if statistics.mean(ran) >= 300 else mean_std(ran, "{:.1f} s")) + ")"
    tokens_cell = mean_std([t / 1e6 for t in tokens], "{:.2f}M") if millions else \
        mean_std([t / 1e3 for t in tokens], "{:.0f}K")
    evals = [r["eval_s"] for r in reached]
    iters = [r["target_iter"] for r in reached]
    best = [r["best_full_val_loss"] for r in recs if r.get("best_full_val_loss") is not None]
    cut = sorted(r["cut_off_iter"] for r in recs if "cut_off_iter" in r)
    reached_cell = f"{len(reached)}/{len(recs)}"
    if cut:  # runs stopped from outside before their end: neither reached nor failed
        reached_cell += (f" ({len(cut)} cut off by the bench's time limit, at iters "
                         f"{', '.join(map(str, cut))}, not yet at the target)")
    return (reached_cell, wall_cell, tokens_cell,
            mean_std(evals, "{:.1f} s"), mean_std(iters, "{:.0f}"), mean_std(best, "{:.4f}"))


def machine_cell(compute):
    """The records table's machine column from a run's compute line: CPU, threads, ISA chosen,
    measured fp32 FMA and bf16 dot-product peaks, and the bf16 matmul's where the line has it."""
    cpu = re.search(r"(\d+) threads on ([^,]+), kernels for (\S+)", compute)
    fp32 = re.search(r"(\d+) GFLOP/s fp32 FMA", compute)
    bf16 = re.search(r"(\d+) GFLOP/s bf16 dot", compute)
    matmul = re.search(r"(\d+) GFLOP/s bfloat16 matmul \(oneDNN\)", compute)
    if not cpu:
        return compute
    cell = f"{cpu.group(2)}, {cpu.group(1)} threads, {cpu.group(3)}"
    if fp32 and bf16 and matmul:  # (on an AMX CPU the bf16 matmuls run far above the dot products)
        cell += (f"; peaks {fp32.group(1)} / {bf16.group(1)} / {matmul.group(1)} GFLOP/s fp32 / "
                 "bf16 dot products / bf16 matmul (oneDNN)")
    elif fp32 and bf16:
        cell += f"; peaks {fp32.group(1)} / {bf16.group(1)} GFLOP/s fp32 / bf16"
    return cell


def machine_key(cell):
    """What identifies a machine cell's machine: its CPU, threads and ISA and its fp32 and bf16 dot
    peaks (a cell that also names the bf16 matmul's peak is the same machine as one that does not)."""
    peaks = re.search(r"peaks (\d+) / (\d+)", cell)
    return (cell.split(";")[0].strip(), peaks.groups() if peaks else None)


def measured_with(sweep_dir, today, commit):
    """(date, commit) a sweep was run with: its measured_with.txt (bench/speedrun.sh writes the
    binary's --version line and the date there), else today and the current build's commit."""
    path = os.path.join(sweep_dir, "measured_with.txt")
    if not os.path.exists(path):
        return today, commit
    with open(path) as f:
        version, date = (f.read().splitlines() + ["", ""])[:2]
    return date or today, commit_of(version) or commit


def commit_of(version):
    m = re.search(r"\(git ([0-9a-f]+(?:-dirty)?)", version)
    return m.group(1) if m else ""


def earlier_records(doc, regenerated):
    """The records table's rows in the doc being rewritten that this run does not regenerate
    (regenerated: {(commit, track, recipe cell, machine_key of the machine cell)}): the table is
    the recipes' history on every machine measured (a row of another machine stays). A row from
    before the machine column gets the machine of its doc's `Machine:` line."""
    if not os.path.exists(doc):
        return []
    rows, in_records, machine = [], False, ""
    with open(doc) as f:
        for line in f:
            if line.startswith("Machine: "):
                machine = machine_cell(line[len("Machine: "):].strip())
            if line.startswith("## "):
                in_records = line.strip() == "## Records"
            cells = line.split("|")
            row_machine = cells[13].strip() if len(cells) > 14 else machine
            if in_records and len(cells) > 6 and re.fullmatch(r" [0-9a-f]{7,40}(-dirty)? ", cells[2]) \
                    and (cells[2].strip(), cells[3].strip(), cells[5].strip(),
                         machine_key(row_machine)) not in regenerated:
                row = line.rstrip("\n")
                if len(cells) == 14:  # 12 columns: no machine column yet
                    row += f" {machine} |"
                if len(cells) <= 15:  # 13 columns: no held-out seeds column yet
                    row += " — |"
                rows.append(row)
    return rows


def earlier_ablation(doc, regenerated):
    """The ablation table's rows in the doc being rewritten whose (track, variant, recipe commit)
    this run does not regenerate: earlier recipes' ablations stay, each row naming its recipe's
    commit (rows from before that column get "before 2026-11-27")."""
    if not os.path.exists(doc):
        return []
    rows, in_ablation = [], False
    with open(doc) as f:
        for line in f:
            if line.startswith("## "):
                in_ablation = line.startswith("## Ablation")
            cells = [c.strip() for c in line.split("|")[1:-1]]
            if not in_ablation or len(cells) < 8 or cells[0] in ("track", "recipe") or \
                    set(cells[0]) <= set("-"):  # the header and its rule
                continue
            if len(cells) == 8:  # no recipe commit column yet
                cells.insert(0, "before 2026-11-27")
            if (cells[0], cells[1], cells[2]) not in regenerated:
                rows.append("| " + " | ".join(cells) + " |")
    return rows


def heldout_cell(out_dir, track):
    """The held-out seeds' cell of a track: reached k/n, wall and tokens to target over the seeds
    of OUT/<track>-ours-heldout (seeds no search used), or "—" when that sweep is absent."""
    sweep_dir = os.path.join(out_dir, f"{track}-ours-heldout")
    recs = run_records(sweep_dir).get("ours", []) if os.path.isdir(sweep_dir) else []
    if not recs:
        return "—"
    k, wall, tok, _, it, best = summary(recs)
    seeds = ",".join(sorted(r["seed"] for r in recs))
    return f"{k} (seeds {seeds}): {wall}, {tok} tokens, iters {it}, best {best}"


def main():
    out_dir, doc, version, command = sys.argv[1:5]
    today = datetime.date.today().isoformat()
    commit = commit_of(version)
    compute = compute_line(out_dir)
    lines = [
        "# The CPU speedrun",
        "",
        "Time to a target validation loss on character-level tinyshakespeare (nanoGPT's data and",
        "split; the validation split is never trained on), the loss taken on the **whole**",
        "validation split (`--target_loss`, every `target_eval_interval` iterations; evaluation",
        "time counted in the wall time and stated apart), `--stop_at_target=True`. nanoGPT's",
        "recipe and ours run side by side in one `bash bench/speedrun.sh` on the same machine,",
        "one seed after another (seeds 1337, 1338, ...); mean ± standard deviation over the seeds",
        "that reached the target. Regenerated by that script, which keeps the records it does not",
        "measure anew (earlier commits, other tracks) below the new ones: do not edit by hand.",
        "",
        "Reading it: tokens to target are exact for a seed; wall times on a shared 2-core VM vary",
        "by tens of percent from run to run (compare the sweep logs' ms/iter of the same recipe),",
        "so an ablation row's wall time says less than its tokens. `goal` is issue 33's wall-time",
        "goal for our recipe on this machine kind (3 s and 5 min; rows before 2026-11-27: issue",
        "19's, 10 s and 15 min). Machines of this kind differ (the `machine` column: CPU and",
        "its peaks, the best measured on that host, remembered across runs, so a slow stretch of",
        "a shared VM does not lower them): compare wall times between rows of the same peaks",
        "only, and there through the sweep logs' ms/iter; tokens to target compare across",
        "machines. `held-out seeds`: our recipe",
        "run again, the same way, on seeds that no search used (`HELDOUT`, 9001-9005): a record",
        "that only a lucky seed reaches shows there. Only hyperparameters were chosen by",
        "validation loss (the search files under config/ say how); nothing trains on it.",
        "",
        f"Machine: {compute}",
        "",
        f"Command of this bench: `{command}` (each row's own is `bash bench/speedrun.sh <its track>`)",
        "",
        "nanoGPT's baby-GPT recipe reaches 1.4697 after 5000 iterations of 64 x 256 tokens (81.9M",
        "tokens; nanoGPT's README): ~3.3 hours per seed here. Its baby-track runs stop after their",
        "first iterations (`NANOGPT_BABY_ITERS`, about the wall time ours takes to the target; its",
        "learning-rate schedule unchanged), so the row says where it stands when ours is done.",
        "",
        "## Records",
        "",
        "| date | commit | track | target | recipe | reached | wall to target | goal | tokens to target | of which eval | iters | best full val | machine | held-out seeds |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    ablation_rows = []
    regenerated = set()
    for track, (title, target, nano_cfg, ours_cfg, goal_s) in TRACKS.items():
        for recipe, cfg in (("nanogpt", nano_cfg), ("ours", ours_cfg)):
            sweep_dir = os.path.join(out_dir, f"{track}-{recipe}")
            if not os.path.isdir(sweep_dir):
                continue
            recs = run_records(sweep_dir)
            main_recs = recs.get(recipe, [])
            if main_recs:
                k, wall, tok, ev, it, best = summary(main_recs)
                name = "nanoGPT's" if recipe == "nanogpt" else "ours"
                goal = "—"
                if recipe == "ours":
                    walls = [r["wall_s"] for r in main_recs if r.get("reached")]
                    met = walls and len(walls) == len(main_recs) and statistics.mean(walls) <= goal_s
                    goal_text = f"{goal_s / 60:.0f} min" if goal_s >= 300 else f"{goal_s:.0f} s"
                    goal = f"≤ {goal_text}: {'met' if met else 'missed'}"
                date, run_commit = measured_with(sweep_dir, today, commit)
                recipe_cell = f"{name} (`{cfg}`)"
                ran_iters = {r.get("max_iters") for r in main_recs}
                full_iters = max_iters_in(cfg)
                # nanoGPT's baby-track runs stop early (NANOGPT_BABY_ITERS); ours run their own
                # schedule, which an earlier commit's recipe may have had shorter than today's
                if recipe == "nanogpt" and len(ran_iters) == 1 and None not in ran_iters and \
                        full_iters and min(ran_iters) < full_iters:
                    recipe_cell = f"{name} (`{cfg}`, its first {min(ran_iters)} of {full_iters} iterations)"
                machine = machine_cell(compute_line(sweep_dir, recipe))
                regenerated.add((run_commit, title, recipe_cell, machine_key(machine)))
                lines.append(f"| {date} | {run_commit} | {title} | ≤ {target} | {recipe_cell} | "
                             f"{k} | {wall} | {goal} | {tok} | {ev} | {it} | {best} | "
                             f"{machine} | "
                             f"{heldout_cell(out_dir, track) if recipe == 'ours' else '—'} |")
            if recipe == "ours":
                _, recipe_commit = measured_with(sweep_dir, today, commit)
                # the recipe's row beside its variants (a run of the recipe alone is a record, and
                # the records table has it, with its machine)
                if main_recs and any(model in recs for model in ABLATION_TEXT):
                    ablation_rows.append((recipe_commit, title, "**the recipe (every technique on)**") +
                                         summary(main_recs))
                for model, text in ABLATION_TEXT.items():
                    if model in recs:
                        ablation_rows.append((recipe_commit, title, text) + summary(recs[model]))
                unnamed = sorted(m for m in recs if m not in ABLATION_TEXT and recs[m] is not main_recs)
                if unnamed:  # an ablation bench/speedrun.sh runs but this table cannot name
                    sys.exit(f"speedrun_table.py: ablation runs {', '.join(unnamed)} in {sweep_dir} "
                             "have no text in ABLATION_TEXT: add one for each")
    lines += earlier_records(doc, regenerated)
    lines += ["", "## Ablation: each technique off in turn", "",
              "Each row is our recipe with one technique turned off (the keys in",
              "bench/speedrun.sh's `ablations`), the same seeds; what it costs to remove is what",
              "it is worth here. `recipe` is the commit whose recipe the row ablates: earlier",
              "recipes' rows are kept below the new ones.", "",
              "| recipe | track | variant | reached | wall to target | tokens to target | of which eval | iters | best full val |",
              "|---|---|---|---|---|---|---|---|---|"]
    for row in ablation_rows:
        lines.append("| " + " | ".join(row) + " |")
    lines += earlier_ablation(doc, {(r[0], r[1], r[2]) for r in ablation_rows})
    with open(doc, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
