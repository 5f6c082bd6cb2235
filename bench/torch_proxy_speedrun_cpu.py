# A PyTorch proxy of the CPU speedrun's recipe (config/speedrun_shakespeare_char_cpu.py), for
# trying architecture ideas before they become keys: the same model (4 layers, 4 heads, 128 wide,
# RMSNorm with gains, rotary, QK-norm with query gain 2, ReLU², tied head, zero-initialized
# projections, soft-cap 30), Muon (momentum 0.8, Nesterov, 5 Newton-Schulz steps of the published
# quintic, lr 0.02 scaled by sqrt(max(1, rows/cols))) for the blocks' matrices and AdamW (lr 4e-3,
# betas 0.9/0.99, weight decay 0.1 on matrices) for the rest, warmup-stable-decay, the
# sequence-length warmup (8, 16, 32, then 64 over 80 iterations, 2048 tokens a step), clipping at
# 1, the loss on the whole validation split at the iterations of `evals`. float32, one thread.
# It is not our trainer (float32 rather than bfloat16, its own random streams): compare variants
# with each other here, over the same seeds, and confirm a winner in nanogpt itself.
#
# Usage (Debian's torch: /usr/bin/python3; data from `nanogpt prepare --tokenizer=char`):
#   /usr/bin/python3 bench/torch_proxy_speedrun_cpu.py DATA_DIR SEED [key=value ...]
# prints one JSON line: the seed, the options, the first evaluated iteration at or below 1.88
# ("reach") and the loss at each evaluation. Keys (defaults in OPTIONS below):
#   value=off|lambdas|add|add0|gain|fixed  what the values v of each block get:
#       lambdas: v = l0 v + l1 ve[token], a learned embedding table per block and two learned
#                scalars from 0.5 (modded-nanogpt's value embeddings); add: v + ve[token] (tables
#                N(0, 0.02)); add0: the same, tables from zero; gain: v = l0 v alone (l0 from
#                gain_init: nanogpt's attn_gain, since attention is linear in v); fixed: v * 0.5
#   smear=1     each token's embedding plus a gated share of the previous one's (modded-nanogpt)
#   x0=1        each block's input a learned mix of the stream and the embedding, from (1, 0)
#   mlp_gain=G  the MLP branch times a learned scalar from G (0 = off)
#   ns=k5|k4|pe5|pe4  Newton-Schulz: the published quintic 5 or 4 times, or the first 5 or 4
#               per-step coefficients of Polar Express (Amsel et al., 2025)
#   ema=D, ema_from=K  evaluate on an exponential moving average of the weights (after each step
#               from K on avg = D avg + (1 - D) w; before it avg = w): nanogpt's ema_decay/ema_from
#   iters, cool, warm, lr, min_lr, mlr, mom, qk_gain, cw, evals: the schedule and rates
import json
import math
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

OPTIONS = dict(iters=140, cool=0.5, warm=30, lr=4e-3, min_lr=4e-4, mlr=0.02, mom=0.8, qk_gain=2.0,
               cw=80, evals='110,115,120,125,130,135,140', value='off', gain_init=0.5, smear=0,
               x0=0, mlp_gain=0.0, ns='k5', ema=0.0, ema_from=100)
V, C, L, H, TMAX, BATCH = 65, 128, 4, 4, 64, 32
HS = C // H
QUINTIC = (3.4445, -4.7750, 2.0315)
POLAR_EXPRESS = [(8.156554524902461, -22.48329292557795, 15.878769915207462),
                 (4.042929935166739, -2.808917465908714, 0.5000178451051316),
                 (3.8916678022926607, -2.772484153217685, 0.5060648178503393),
                 (3.285753657755655, -2.3681294933425376, 0.46449024233003106),
                 (2.3465413258596377, -1.7097828382687081, 0.42323551169305323)]


def rms(x, eps=1e-5):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def rotary(x):  # x (B, H, T, HS): pairs (2i, 2i+1) turned by p * 10000^(-2i/HS)
    t = x.shape[2]
    inv = 1.0 / (10000 ** (torch.arange(0, HS, 2).float() / HS))
    ang = torch.arange(t).float()[:, None] * inv[None, :]
    cos, sin = ang.cos(), ang.sin()
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1).flatten(-2)


class Block(nn.Module):
    def __init__(self, opt):
        super().__init__()
        self.opt = opt
        self.n1, self.n2 = nn.Parameter(torch.ones(C)), nn.Parameter(torch.ones(C))
        self.c_attn = nn.Linear(C, 3 * C, bias=False)
        self.c_proj = nn.Linear(C, C, bias=False)
        self.c_fc = nn.Linear(C, 4 * C, bias=False)
        self.m_proj = nn.Linear(4 * C, C, bias=False)
        if opt['value'] in ('lambdas', 'gain'):
            first = opt['gain_init'] if opt['value'] == 'gain' else 0.5
            self.lam = nn.Parameter(torch.tensor([first, 0.5]))
        if opt['x0']:
            self.x0_mix = nn.Parameter(torch.tensor([1.0, 0.0]))
        if opt['mlp_gain']:
            self.mgain = nn.Parameter(torch.tensor(opt['mlp_gain']))

    def forward(self, x, ve, x0):
        o = self.opt
        if o['x0']:
            x = self.x0_mix[0] * x + self.x0_mix[1] * x0
        b, t, _ = x.shape
        q, k, v = self.c_attn(rms(x) * self.n1).split(C, 2)
        if o['value'] == 'lambdas':
            v = self.lam[0] * v + self.lam[1] * ve
        elif o['value'] in ('add', 'add0'):
            v = v + ve
        elif o['value'] == 'gain':
            v = self.lam[0] * v
        elif o['value'] == 'fixed':
            v = 0.5 * v
        q, k, v = [z.view(b, t, H, HS).transpose(1, 2) for z in (q, k, v)]
        q, k = rotary(rms(q) * o['qk_gain']), rotary(rms(k))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(HS)
        att = att.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float('-inf'))
        y = (att.softmax(-1) @ v).transpose(1, 2).reshape(b, t, C)
        x = x + self.c_proj(y)
        m = self.m_proj(F.relu(self.c_fc(rms(x) * self.n2)).square())
        return x + (self.mgain * m if o['mlp_gain'] else m)


class GPT(nn.Module):
    def __init__(self, opt):
        super().__init__()
        self.opt = opt
        self.wte = nn.Embedding(V, C)
        self.blocks = nn.ModuleList([Block(opt) for _ in range(L)])
        self.nf = nn.Parameter(torch.ones(C))
        if opt['value'] in ('lambdas', 'add', 'add0'):
            self.ves = nn.ModuleList([nn.Embedding(V, C) for _ in range(L)])
        if opt['smear']:
            self.smear_gate = nn.Linear(12, 1, bias=False)
            self.smear_lam = nn.Parameter(torch.zeros(1))
        for n, p in self.named_parameters():
            if p.dim() == 2:
                zero = n.endswith('proj.weight') or 'smear_gate' in n
                zero = zero or ('ves' in n and opt['value'] == 'add0')
                nn.init.zeros_(p) if zero else nn.init.normal_(p, std=0.02)

    def forward(self, idx, tgt):
        x = self.wte(idx)
        if self.opt['smear']:
            g = self.smear_lam * torch.sigmoid(self.smear_gate(x[:, 1:, :12]))
            x = torch.cat([x[:, :1], x[:, 1:] + g * x[:, :-1]], 1)
        x0 = x
        for i, b in enumerate(self.blocks):
            x = b(x, self.ves[i](idx) if hasattr(self, 'ves') else None, x0)
        logits = 30 * torch.tanh(F.linear(rms(x) * self.nf, self.wte.weight) / 30)
        return F.cross_entropy(logits.view(-1, V), tgt.reshape(-1), reduction='sum'), tgt.numel()


def newton_schulz(g, kind):
    if kind.startswith('k'):
        coefs, x = [QUINTIC] * int(kind[1:]), g / (g.norm() + 1e-7)
    else:
        coefs, x = POLAR_EXPRESS[:int(kind[2:])], g / (g.norm() * 1.01 + 1e-7)
    tall = g.shape[0] > g.shape[1]
    if tall:
        x = x.T
    for a, b, c in coefs:
        s = x @ x.T
        x = a * x + (b * s + c * s @ s) @ x
    return x.T if tall else x


def main():
    data_dir, seed = sys.argv[1], int(sys.argv[2])
    opt = dict(OPTIONS)
    for arg in sys.argv[3:]:
        k, v = arg.split('=')
        if k not in opt:
            sys.exit(f"unknown key '{k}': expected one of {', '.join(opt)}")
        opt[k] = v if isinstance(opt[k], str) else type(opt[k])(v)
    torch.set_num_threads(1)
    torch.manual_seed(seed)
    train = torch.from_numpy(np.fromfile(f'{data_dir}/train.bin', dtype=np.uint16).astype(np.int64))
    val = torch.from_numpy(np.fromfile(f'{data_dir}/val.bin', dtype=np.uint16).astype(np.int64))
    model = GPT(opt)
    hidden = [p for n, p in model.named_parameters() if p.dim() == 2 and n.startswith('blocks')]
    ids = {id(p) for p in hidden}
    rest = [p for p in model.parameters() if id(p) not in ids]
    adam = torch.optim.AdamW([{'params': [p for p in rest if p.dim() >= 2], 'weight_decay': 0.1},
                              {'params': [p for p in rest if p.dim() < 2], 'weight_decay': 0.0}],
                             lr=opt['lr'], betas=(0.9, 0.99), eps=1e-8)
    momentum = [torch.zeros_like(p) for p in hidden]

    def lr_at(it):
        if it < opt['warm']:
            return opt['lr'] * (it + 1) / (opt['warm'] + 1)
        start = opt['iters'] - int(opt['cool'] * opt['iters'])
        f = max(0.0, (it - start) / (opt['iters'] - start))
        return opt['lr'] + f * (opt['min_lr'] - opt['lr'])

    @torch.no_grad()
    def whole_split_loss():  # windows of 64 covering every target once, as nanogpt's
        model.eval()
        n = val.numel() - 1
        w = n // TMAX
        xs, ys = val[:w * TMAX].view(w, TMAX), val[1:w * TMAX + 1].view(w, TMAX)
        total, count = 0.0, 0
        for i in range(0, w, 256):
            s, c = model(xs[i:i + 256], ys[i:i + 256])
            total, count = total + s.item(), count + c
        if n > w * TMAX:
            s, c = model(val[w * TMAX:n].view(1, -1), val[w * TMAX + 1:n + 1].view(1, -1))
            total, count = total + s.item(), count + c
        model.train()
        return total / count

    params = list(model.parameters())
    ema = [p.detach().clone() for p in params]

    def eval_loss():  # on the average when ema > 0 (swapped in, then the weights back)
        if opt['ema'] <= 0:
            return whole_split_loss()
        with torch.no_grad():
            saved = [p.detach().clone() for p in params]
            for p, e in zip(params, ema):
                p.copy_(e)
            v = whole_split_loss()
            for p, w in zip(params, saved):
                p.copy_(w)
        return v

    evals = {int(e) for e in opt['evals'].split(',')}
    gen = torch.Generator().manual_seed(seed)
    losses, start = {}, time.time()
    for it in range(opt['iters'] + 1):
        if it in evals:
            losses[it] = eval_loss()
        if it == opt['iters']:
            break
        t = TMAX if it >= opt['cw'] else [8, 16, 32][min(2, it * 3 // opt['cw'])]
        ix = torch.randint(train.numel() - t - 1, (BATCH * TMAX // t,), generator=gen)
        x = torch.stack([train[i:i + t] for i in ix])
        y = torch.stack([train[i + 1:i + t + 1] for i in ix])
        s, c = model(x, y)
        (s / c).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        lr = lr_at(it)
        for g in adam.param_groups:
            g['lr'] = lr
        adam.step()
        with torch.no_grad():
            for p, m in zip(hidden, momentum):
                m.mul_(opt['mom']).add_(p.grad)
                step = newton_schulz(p.grad + opt['mom'] * m, opt['ns'])
                scale = math.sqrt(max(1.0, p.shape[0] / p.shape[1]))
                p.add_(step, alpha=-opt['mlr'] * lr / opt['lr'] * scale)
        model.zero_grad(set_to_none=True)
        with torch.no_grad():
            beta = opt['ema'] if it >= opt['ema_from'] else 0.0
            for p, e in zip(params, ema):
                e.mul_(beta).add_(p.detach(), alpha=1 - beta)
    reach = next((k for k in sorted(losses) if losses[k] <= 1.88), None)
    print(json.dumps({'seed': seed, 'opt': opt, 'reach': reach,
                      'val': {k: round(v, 4) for k, v in sorted(losses.items())},
                      'seconds': round(time.time() - start, 1)}))


if __name__ == '__main__':
    main()
