# Summarizes bench/run_nanogpt_roundtrip_bench.sh's logs: per run the mean train loss of each
# window of 10 iterations and the evaluations, then the verdict (see the script's header).
import json
import re
import statistics
import sys

work, seeds = sys.argv[1], int(sys.argv[2])


def nanogpt_log(path):
    losses, evals = {}, {}
    for line in open(path):
        m = re.match(r"iter (\d+): loss ([\d.]+)", line)
        if m:
            losses[int(m.group(1))] = float(m.group(2))
        m = re.match(r"step (\d+): train loss ([\d.]+), val loss ([\d.]+)", line)
        if m:
            evals[int(m.group(1))] = float(m.group(3))
    return losses, evals


def ours_log(path):
    losses, evals = {}, {}
    for line in open(path):
        j = json.loads(line)
        if "val_loss" in j:
            evals[j["iter"]] = j["val_loss"]
        elif "loss" in j:
            losses[j["iter"]] = j["loss"]
    return losses, evals


def window(losses, lo):
    vals = [losses[i] for i in range(lo, lo + 10) if i in losses]
    return statistics.mean(vals) if len(vals) == 10 else float("nan")


runs = {}
for k in range(seeds):
    runs[f"nanoGPT seed {1337 + k}, uninterrupted"] = nanogpt_log(f"{work}/straight_{1337 + k}.log")
first, ours, last = (nanogpt_log(f"{work}/first.log"), ours_log(f"{work}/ours/metrics.jsonl"),
                     nanogpt_log(f"{work}/last.log"))
trip = ({**first[0], **ours[0], **last[0]}, {**first[1], **ours[1], **last[1]})
# Who ran which iterations of the round trip: nanoGPT 0-49, ours 50-99, nanoGPT 100-149.
runs["round trip (nanoGPT 0-49, ours 50-99, nanoGPT 100-149)"] = trip
windows = list(range(0, 150, 10))
print("| run | " + " | ".join(f"{w}-{w + 9}" for w in windows) + " | val@50 | val@100 | val@150 |")
print("|---|" + "---|" * (len(windows) + 3))
for name, (losses, evals) in runs.items():
    cells = [f"{window(losses, w):.3f}" for w in windows]
    vals = [f"{evals.get(i, float('nan')):.4f}" for i in (50, 100, 150)]
    print(f"| {name} | " + " | ".join(cells) + " | " + " | ".join(vals) + " |")

straight = [runs[f"nanoGPT seed {1337 + k}, uninterrupted"] for k in range(seeds)]
final = [r[1][150] for r in straight]
mean, sd = statistics.mean(final), statistics.stdev(final) if len(final) > 1 else 0.0
got = trip[1][150]
ok_final = abs(got - mean) <= 3 * sd + 1e-9 or min(final) <= got <= max(final)
print(f"\nval loss at 150: round trip {got:.4f}; nanoGPT uninterrupted {', '.join(f'{v:.4f}' for v in final)}"
      f" (mean {mean:.4f}, sd {sd:.4f}) -> {'within' if ok_final else 'OUTSIDE'} the seeds' spread")
# Continuity: every window of the round trip from 40 on stays in the seeds' band: its distance to
# the seeds' mean within 3 sigma, sigma pooled from the seeds' own spread over those windows. A
# broken hand-over (weights or moments mixed up) leaves the band by far more than that.
band = [w for w in windows if w >= 40]
var = statistics.mean(statistics.variance([window(r[0], w) for r in straight]) for w in band)
sigma = (var * (1 + 1 / len(straight))) ** 0.5
worst = max(band, key=lambda w: abs(window(trip[0], w) - statistics.mean(window(r[0], w) for r in straight)))
dist = window(trip[0], worst) - statistics.mean(window(r[0], worst) for r in straight)
ok_cont = abs(dist) <= 3 * sigma
print(f"train-loss windows 40-149: the round trip's farthest from the seeds' mean is {worst}-{worst + 9} "
      f"at {dist:+.4f}; 3 sigma = {3 * sigma:.4f} -> {'continuous' if ok_cont else 'A JUMP'}")
# The same weights evaluated by both programs at each hand-over (different random batches).
print(f"hand-over at 50: nanoGPT's evaluation {first[1].get(50, float('nan')):.4f}, ours of the same "
      f"weights {ours[1].get(50, float('nan')):.4f}; at 100: ours {ours[1].get(100, float('nan')):.4f}, "
      f"nanoGPT's of the same weights {last[1].get(100, float('nan')):.4f}")
print("round trip:", "PASS" if ok_final and ok_cont else "FAIL")
sys.exit(0 if ok_final and ok_cont else 1)
