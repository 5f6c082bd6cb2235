"""PyTorch peer for side-by-side benchmarks: a nanoGPT-equivalent GPT-2 and training loop (AdamW,
warmup + cosine, grad clip, random batches, eval like nanoGPT's estimate_loss), written here to run
with Debian's python3-torch 1.13 (CPU). It reads the same train.bin / val.bin as `nanogpt train`.

  OMP_WAIT_POLICY=PASSIVE OPENBLAS_CORETYPE=SkylakeX /usr/bin/python3 bench/torch/train_ref.py \
      --data_dir=data/shakespeare_char --max_iters=2000

Prints one JSON line: median ms/iter, wall seconds, final val loss, peak RSS. `--dtype=bfloat16`
runs the forward under torch.autocast (bf16 matmuls, fp32 master weights), as nanoGPT does.
"""
import argparse
import json
import math
import resource
import time

import numpy as np
import torch
import torch.nn as nn
from torch.nn import functional as F


class Block(nn.Module):
    def __init__(self, c, h, bias, dropout):
        super().__init__()
        self.h = h
        self.dropout = dropout
        self.ln_1 = nn.LayerNorm(c, elementwise_affine=True)
        self.c_attn = nn.Linear(c, 3 * c, bias=bias)
        self.c_proj = nn.Linear(c, c, bias=bias)
        self.ln_2 = nn.LayerNorm(c)
        self.c_fc = nn.Linear(c, 4 * c, bias=bias)
        self.mlp_proj = nn.Linear(4 * c, c, bias=bias)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
        q = q.view(B, T, self.h, C // self.h).transpose(1, 2)
        k = k.view(B, T, self.h, C // self.h).transpose(1, 2)
        v = v.view(B, T, self.h, C // self.h).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        att = F.dropout(att, self.dropout, self.training)  # nanoGPT's attn_dropout
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        x = x + F.dropout(self.c_proj(y), self.dropout, self.training)
        mlp = self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))
        return x + F.dropout(mlp, self.dropout, self.training)


class GPT(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.wte = nn.Embedding(a.vocab_size, a.n_embd)
        self.wpe = nn.Embedding(a.block_size, a.n_embd)
        self.dropout = a.dropout
        self.blocks = nn.ModuleList([Block(a.n_embd, a.n_head, a.bias, a.dropout)
                                     for _ in range(a.n_layer)])
        self.ln_f = nn.LayerNorm(a.n_embd)
        for name, p in self.named_parameters():
            if p.dim() >= 2:
                std = 0.02 / math.sqrt(2 * a.n_layer) if name.endswith("proj.weight") else 0.02
                nn.init.normal_(p, 0.0, std)
            elif "ln" in name and name.endswith("weight"):
                nn.init.ones_(p)
            else:
                nn.init.zeros_(p)

    def forward(self, idx, targets):
        T = idx.shape[1]
        x = F.dropout(self.wte(idx) + self.wpe(torch.arange(T)), self.dropout, self.training)
        for b in self.blocks:
            x = b(x)
        logits = F.linear(self.ln_f(x), self.wte.weight)
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data_dir", default="")
    p.add_argument("--batch_size", type=int, default=12)
    p.add_argument("--block_size", type=int, default=64)
    p.add_argument("--n_layer", type=int, default=4)
    p.add_argument("--n_head", type=int, default=4)
    p.add_argument("--n_embd", type=int, default=128)
    p.add_argument("--vocab_size", type=int, default=65)
    p.add_argument("--bias", type=int, default=0)
    p.add_argument("--max_iters", type=int, default=2000)
    p.add_argument("--lr_decay_iters", type=int, default=2000)
    p.add_argument("--learning_rate", type=float, default=1e-3)
    p.add_argument("--min_lr", type=float, default=1e-4)
    p.add_argument("--warmup_iters", type=int, default=100)
    p.add_argument("--beta2", type=float, default=0.99)
    p.add_argument("--eval_iters", type=int, default=20)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--dropout", type=float, default=0.0)
    # bfloat16: nanoGPT's CPU mixed precision, torch.autocast(device_type="cpu", dtype=bfloat16)
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    a = p.parse_args()
    torch.manual_seed(1337)
    torch.set_num_threads(a.threads)
    if a.data_dir:
        train = np.memmap(f"{a.data_dir}/train.bin", dtype=np.uint16, mode="r")
        val = np.memmap(f"{a.data_dir}/val.bin", dtype=np.uint16, mode="r")
    else:  # synthetic tokens for speed-only runs (e.g. GPT-2 124M shapes)
        train = val = np.random.randint(0, a.vocab_size, 1 << 20).astype(np.uint16)

    def batch(data):
        ix = torch.randint(len(data) - a.block_size, (a.batch_size,))
        x = torch.stack([torch.from_numpy(data[i:i + a.block_size].astype(np.int64)) for i in ix])
        y = torch.stack([torch.from_numpy(data[i + 1:i + 1 + a.block_size].astype(np.int64)) for i in ix])
        return x, y

    model = GPT(a)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    nodecay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": nodecay, "weight_decay": 0.0}],
                            lr=a.learning_rate, betas=(0.9, a.beta2))

    def lr_at(it):
        if it < a.warmup_iters:
            return a.learning_rate * (it + 1) / (a.warmup_iters + 1)
        if it > a.lr_decay_iters:
            return a.min_lr
        r = (it - a.warmup_iters) / (a.lr_decay_iters - a.warmup_iters)
        return a.min_lr + 0.5 * (1.0 + math.cos(math.pi * r)) * (a.learning_rate - a.min_lr)

    @torch.no_grad()
    def val_loss():
        model.eval()
        out = sum(model(*batch(val)).item() for _ in range(a.eval_iters)) / a.eval_iters
        model.train()
        return out

    times = []
    wall = time.time()
    for it in range(a.max_iters):
        t0 = time.time()
        for g in opt.param_groups:
            g["lr"] = lr_at(it)
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16,
                            enabled=a.dtype == "bfloat16"):
            loss = model(*batch(train))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        times.append((time.time() - t0) * 1e3)
    wall = time.time() - wall
    times.sort()
    print(json.dumps({"peer": "pytorch", "torch": torch.__version__, "dtype": a.dtype,
                      "iters": a.max_iters,
                      "median_ms": times[len(times) // 2], "wall_s": wall,
                      "final_val_loss": val_loss() if a.data_dir else None,
                      "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))


if __name__ == "__main__":
    main()
