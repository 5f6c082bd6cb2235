#!/usr/bin/env python3
"""scripts/gpu_check_table.py OUT STEPS: the table of scripts/gpu_check.sh from the logs in OUT.

Per workload and program: median ms/step over the steps after the first 5 (compilation and
warm-up excluded), tokens/s, MFU against the GPU's dense bf16 peak (989.4 TFLOP/s for H100 / H200
SXM; nanoGPT's FLOPs-per-token formula, 6N + 12 L H Q T, for both programs), peak GPU memory
(nvidia-smi, every 0.2 s, whole GPU) and the loss at the last step; then the loss check against the
same run on the CPU and the GPU tests' summary."""
import os
import re
import statistics
import sys

out, steps = sys.argv[1], int(sys.argv[2])
PEAK = 989.4e12
# (layers, heads, head size, T, batch, non-embedding parameters (nanoGPT's count))
SHAPES = {"W2": (6, 6, 64, 256, 64, 10.65e6), "GPT-2 124M": (12, 12, 64, 1024, 16, 123.65e6)}
ITER = re.compile(r"^iter (\d+): loss ([\d.naninf]+), time ([\d.]+)ms")


def read(name):
    path = os.path.join(out, name)
    return open(path, errors="replace").read() if os.path.exists(path) else ""


def parse(name):
    rows = [(int(m.group(1)), float(m.group(2)), float(m.group(3)))
            for m in map(ITER.match, read(name).splitlines()) if m]
    return rows


def peak_mib(name):
    vals = [int(x) for x in read(name).split() if x.strip().isdigit()]
    return max(vals) if vals else None


lines = ["| workload | program | ms/step | tokens/s | MFU (bf16 peak) | peak GPU memory | loss at last step |",
         "|---|---|---|---|---|---|---|"]
results = {}
LABELS = {"ours": "nanogpt.cpp (CUDA), flash attention (the default: mma.sync)",
          "mma": "nanogpt.cpp (CUDA), flash attention (mma.sync)",
          "noepi": "nanogpt.cpp (CUDA), GELU in its own kernels",
          "naive": "nanogpt.cpp (CUDA), naive attention",
          "nanogpt": "nanoGPT + torch.compile"}
for wl, tag in (("W2", "w2"), ("GPT-2 124M", "gpt2")):
    L, H, Q, T, B, N = SHAPES[wl]
    fpt = 6 * N + 12 * L * H * Q * T
    for prog in ("ours", "mma", "noepi", "naive", "nanogpt"):
        rows = parse(f"{tag}_{prog}.log")
        label = LABELS[prog]
        if not rows:
            if read(f"{tag}_{prog}.log"):
                lines.append(f"| {wl} | {label} | (failed: see {tag}_{prog}.log) | | | | |")
            continue
        timed = [ms for it, _, ms in rows if it >= 5] or [ms for _, _, ms in rows]
        ms = statistics.median(timed)
        tok = B * T / (ms / 1e3)
        mem = peak_mib(f"mem_{tag}_{prog}.txt")
        last = rows[-1]
        results[(wl, prog)] = (ms, tok, last)
        lines.append(f"| {wl} | {label} | {ms:.1f} | {tok:,.0f} | {100 * tok * fpt / PEAK:.1f}% | "
                     f"{'%.1f GiB' % (mem / 1024) if mem else 'n/a'} | {last[1]:.4f} (iter {last[0]}) |")
for wl in SHAPES:
    if (wl, "ours") in results and (wl, "nanogpt") in results:
        r = results[(wl, "ours")][1] / results[(wl, "nanogpt")][1]
        lines.append(f"\n{wl}: nanogpt.cpp / nanoGPT tokens/s = {r:.2f}x")
cpu = parse("w2_cpu.log")
gpu = parse("w2_ours.log")
if cpu and gpu:
    c = {it: loss for it, loss, _ in cpu}
    common = [it for it, _, _ in gpu if it in c]
    if common:
        worst = max(abs(l - c[it]) for it, l, _ in gpu if it in c)
        it = common[-1]
        g = dict((i, l) for i, l, _ in gpu)[it]
        lines.append(f"\nW2 bf16 loss, GPU vs CPU (same batches, init and dropout masks): iter {it}: "
                     f"{g:.4f} vs {c[it]:.4f} (|diff| {abs(g - c[it]):.4f}); largest |diff| over "
                     f"{len(common)} steps {worst:.4f}")
resumed = read("w2_gpu_to_cpu.log")
m = re.search(r"^resumed from .*$", resumed, re.M)
lines.append("\nGPU checkpoint resumed on the CPU: " + (m.group(0) if m else "no (see w2_gpu_to_cpu.log)"))
m = re.search(r"^resumed from .*$", read("w2_cpu_to_gpu.log"), re.M)
lines.append("CPU checkpoint resumed on the GPU: " + (m.group(0) if m else "no (see w2_cpu_to_gpu.log)"))
for dev in ("cuda", "cpu"):
    m = re.search(r"sampled .*", read(f"sample_{dev}.log"))
    lines.append(f"sampling ({dev}): " + (m.group(0) if m else f"no (see sample_{dev}.log)"))
tests = read("test_cuda.log")
summary = [l.strip() for l in tests.splitlines()
           if re.match(r"^\[  (PASSED|FAILED|SKIPPED) *\] \d+ tests?", l)]
lines.append("GPU tests: " + ("; ".join(summary) if summary else "no summary (see test_cuda.log)"))
print("\n".join(lines))
# Issue 52's speedrun on the GPU (PARTS gpuspeedrun): each recipe and seed, reached or not.
speed = sorted(f for f in os.listdir(out) if re.match(r"gpu_speedrun_(baby|cpu)_\d+\.log$", f))
if speed:
    lines += ["", "| speedrun on the GPU | seed | result |", "|---|---|---|"]
    for f in speed:
        track, seed = re.match(r"gpu_speedrun_(baby|cpu)_(\d+)\.log", f).groups()
        m = re.search(r"target val loss .*", read(f))
        err = re.search(r"^error.*", read(f), re.M)
        result = m.group(0) if m else (err.group(0)[:200] if err else f"no target line (see {f})")
        lines.append(f"| {'baby GPT, 1.47' if track == 'baby' else 'CPU recipe, 1.88'} | {seed} | {result} |")
    print("\n".join(lines[-(len(speed) + 2):]))
