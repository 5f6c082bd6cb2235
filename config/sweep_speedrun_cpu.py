# The ninth step of the search behind config/speedrun_shakespeare_char_cpu.py (issue 33,
# 2026-11-28, AMD EPYC; search seeds 1337-1344 only): evaluating on a moving average of the
# weights. In the PyTorch proxy (bench/torch_proxy_speedrun_cpu.py value=gain iters=135, the recipe
# with the attention gain), mean whole-split loss at 115 / 120 of 135 iterations: the weights
# 1.8988 / 1.8824 (reach 123.1); ema=0.9 ema_from=100 1.8843 / 1.8712 (120.6); 0.8 from 100
# 1.8849 / 1.8719; 0.95 from 90 1.8892 / 1.8777. Then in nanogpt (two one-thread runs at once, the
# whole split every 5 from 105 or 110 to the end, stop_at_target=False; the step's own speed work
# of this session left every float as it was, so the recipe's seeds are those of the eighth step):
#   the recipe (135 iterations)    115 120 125 115 120 120 120 130   mean 120.6; mean loss at
#                                  110 / 115 / 120 / 125 / 130: 1.9061 1.8900 1.8766 1.8629 1.8483
#   ema_decay 0.9, ema_from 100    115 115 125 115 115 115 110 125   116.9; 1.8918 1.8763 1.8651
#                                                                    1.8569 1.8490
#   0.9 from 90                    115 110 125 115 115 115 105 125   115.6; 1.8867 1.8757 1.8657
#                                                                    1.8575 1.8496 (kept)
#   0.9 from 80                    115 110 125 115 115 115 105 125   (losses within 0.0003 of 90)
#   0.93 from 90, 0.85 from 100    mean 116.9, 116.9 (0.85: seed 1344 at 130)
#   0.9 from 100 with 130 / 125 iterations (warmup 80, cooldown half): the same reaches at 130;
#     at 125 seed 1344 never reaches (1.8802 at the end)
# The average gains most mid-cooldown and nothing at the schedule's end (at 130 the weights'
# own loss is as low): it buys ~4 iterations where the target is reached. Seeds 1339 and 1344
# reach at 125 (1344 at 1.8794). Kept: ema_decay 0.9 from 90, the whole split at 115, 125 and 135
# (an evaluation costs ~15 steps: checking every 10 rather than 5 saves the slow seeds one; the
# grid now starts at target_eval_from, 71236be: it was the interval's multiples, 120 and 130).
# Also tried with the average (the whole split at 110, 120, 130): cooldown_fraction 0.4 and 0.6,
# mean loss at 110 / 120 1.8870 / 1.8633 and 1.8844 / 1.8640 against 0.5's 1.8867 / 1.8657: no
# change beyond the seeds' noise. Measured (bench/speedrun.sh cpu at 71236be, docs/speedrun.md):
# record seeds at 115 / 115 / 125 (242K tokens), held-out 9001-9005 at 115 125 115 115 125 (9002
# at 1.8808 at 115).
# Then with the average, the whole split at 105, 115, 125, 135 (mean loss at 115 / 125; seeds
# reaching at the 115 check): the recipe 1.8757 / 1.8575 (6 of 8); learning_rate 5e-3 (AdamW's
# groups: embeddings, head, gains) 1.8714 / 1.8522 (6 of 8; lower or equal at 115 on every seed,
# 1344 1.8823 against 1.8927) kept; 6e-3 (min_lr 6e-4) 1.8737 / 1.8559; muon_learning_rate 0.025
# 1.8740 / 1.8559; both 5e-3 and 0.025 1.8748 / 1.8557; muon_momentum 0.85 1.8806 / 1.8617.
# (Without the average, the seventh step found 6e-3 no sooner: the average takes up the noise.)
# Measured (bench/speedrun.sh cpu at c6af115): record seeds 1337-1339 and held-out 9001-9005 all
# at the 115 check (236K tokens; their losses there 1.8594-1.8783), 2.8-3.0 s at ~21.5 ms a step.
#
# The eighth step of the search behind config/speedrun_shakespeare_char_cpu.py (issue 33,
# 2026-11-28, AMD EPYC; search seeds 1337-1344 only).
# First, in a PyTorch proxy of the recipe (bench/torch_proxy_speedrun_cpu.py: float32, its own
# random streams, so variants compare with each other there; these are its first draft's figures,
# and the committed script sums in another order, so a seed's losses differ by ~0.002), the mean
# whole-split loss over the 8 seeds at iterations 120 / 125 of the 140-iteration schedule, the
# recipe's own 1.8962 / 1.8811:
#   value embeddings, v = l0 v + l1 ve[token] (value=lambdas)   1.8848 / 1.8697
#   the values times a learned scalar alone, from 0.5 (value=gain)  1.8887 / 1.8709: nearly all
#     of the value embeddings' gain is the values' learned scale
#   value embeddings added without the scalars (add, add0)  1.8944 / 1.8786, 1.8951 / 1.8779
#   the embedding mixed into each block's input (x0)         1.8894 / 1.8762 (with value
#     embeddings 1.8880 / 1.8736)
#   smear (the previous token's embedding, gated)            1.8972 / 1.8826
#   Polar Express coefficients, 5 / 4 Newton-Schulz steps    1.8968 / 1.8825, 1.9038 / 1.8869
#   value=gain at 130 iterations 1.8782 / 1.8637 (the recipe at 130: 1.8872 / 1.8742, and one
#     seed of 8 never at 1.88)
# Attention is linear in v, so the values' learned scale is a learned gain on the attention branch:
# the key attn_gain. In nanogpt (two one-thread runs at once; the whole split every 5 iterations
# from 110), iterations to 1.88 for seeds 1337-1344:
#   the recipe (140 iterations)          115 120 125 125 125 125 130 130   mean 124.4
#   attn_gain 0.5                        115 120 125 120 120 120 120 130   121.3
#   attn_gain 0.3 / 1.0                  mean 122.5 / 123.1
#   the recipe at 130 iterations         115 120 130 120 120 120 120 130   121.9 (two seeds only
#                                                                          at the schedule's end)
#   attn_gain 0.5 at 130 / 0.3 at 130    mean 120.0 / 121.3 (seed 1344 at the schedule's end)
#   attn_gain 0.5 at 135 iterations      115 120 125 115 120 120 120 130   120.6 (kept)
# Kept: attn_gain 0.5, 135 iterations (warmup 80, cooldown half), the whole split every 5 from
# 120 (six of the eight search seeds stop at the first check).
#
# The seventh step (issue 33,
# 2026-11-28, AMD EPYC; two one-thread runs at once, so iterations compare, not times; the whole
# split every 5 or 10 iterations to the end, stop_at_target=False; search seeds 1337-1344 only).
# Iterations to 1.88 per seed, each change on top of the one before:
#   the recipe of 4103dfb (160 iterations, Muon momentum 0.95)   140 / 160 / 160 / 150 (1337-1340)
#   sampling 'sequential', rope_theta 100 or 1000, grad_clip 0, beta2 0.95, n_head 8, half the
#     tokens per step for the first 30-90 iterations, batch 32 at every warmup context: none
#     sooner (sequential and clip 0 much later; fewer tokens early cost as many iterations as
#     they save in time: the run is bound by tokens from its first steps)
#   muon_momentum 0.9                                        140 / 140 / 140 / 140
#   muon_momentum 0.85 / 0.8 (0.75 alike)                    130 / 140 / 140 / 140 and 140 x 4
#   ... with 140 iterations, warmup 80, cooldown 0.5, m 0.8  120 / 130 / 130 / 125; 1341-1344:
#                                                            130 / 130 / 130 / 135
#   ... + QK-norm's query gain 2 (qk_norm_gain; 1.5 and 3: less)  120 / 125 / 125 / 120;
#                                                            1341-1344: 125 / 125 / 125 / 130 (kept)
#   ... + learning_rate 6e-3 or 8e-3, muon_learning_rate 0.025, muon_momentum 0.75, muon_ns_steps 4,
#     130 iterations: within a seed's noise, or a slow seed later (1344 at 135 with 6e-3)
# The whole split then checked every 5 iterations from 125: 7 of the 8 search seeds reach the
# target at the first check, one at the second; the schedule ends 10-15 iterations past them.
#
# The step before (the sixth; the grid below): the sequence-length warmup's length and first
# context x the schedule's length, 4 seeds, runs to the end of their schedule with the loss on
# the whole validation split every 10 iterations from 120 (stop_at_target=False: the whole curve). Hyperparameters only are
# chosen by that validation loss; nothing trains on it.
# Its result (2026-11-27, AMD EPYC, 2 threads; seeds 1337-1340; `iter:loss` of the whole split):
#   the recipe before (no warmup, 180 iterations)  1337: 160:1.8791  1338: 170:1.8885 180:1.8675
#   warmup 90 from 16                               1337: 160:1.8712  1338: 160:1.8723 170:1.8557
#   warmup 120 from 16; 60 from 32; 90 from 4       no sooner than 90 from 16
#   warmup 90 from 8 (contexts 8, 16, 32, then 64)  1337: 150:1.8793  1338: 160:1.8710
#     ... 150 iterations                            reached at 140 / 150 / 150 / 150 (4 seeds): at
#                                                   the schedule's end, a lucky draw
#     ... 140 iterations (warmup 80)                2 of 4 reach it (at 140)
#     ... 160 iterations                            140 / 150 / 160 / 150, last losses 1.855-1.874:
#                                                   kept, with the whole-split check from 140
# Issue 33, 2026-11-28 (AMD EPYC, 2 threads; seeds 1337-1340; the recipe of 4103dfb, each key
# alone on top of it; whole split every 10 from 110 to the end, 160): iterations to 1.88 per seed,
#   the recipe                                     140 / 150 / 160 / 150
#   muon_ns_steps 4                                150 / 160 / 160 / 150 (~2% faster steps)
#   n_head 2 (head size 64)                        140 / 160 / 160 / 150 (steps ~15% slower)
#   learning_rate 6e-3                             150 / 150 / 160 / 150
#   muon_learning_rate 0.025                       140 / 150 / 160 / 150
#   muon_momentum_warmup_iters 50 (from 0.85)      150 / 150 / 160 / 160
#   warmup_iters 15                                140 / 160 / 160 / 150
#   weight_decay 0                                 140 / 160 / 160 / 150
#   cooldown_fraction 0.5                          150 / 150 / 150 / 150 (losses at 150 within 0.003)
#   batch 24 x 190 iterations (warmup 110)         180 / 190 / 180 / 190 (more iterations, same step time)
# and on seeds 1341-1344: the recipe 160 / 150 / 160 / 160 (1344 only at the schedule's last
# check: the margin is thin), cooldown_fraction 0.5 160 / 150 / 150 / 160, 0.6 160 / 150 / 160 / 160.
# None reaches sooner: at ~20 ms a step and ~0.29 s a whole-split evaluation, 3 s needs the
# target by ~130 iterations with one evaluation, 15% fewer than any of these.
# Issue 33, later (2026-11-27, seeds 1337-1340, stopping at the target, whole split every 10 from
# 110; run beside another sweep, so tokens compare, not times): --unet_skips=True (U-net skips,
# 2 at 4 layers) reached at 160/160/160/160 against the recipe's 140/150/160/150: not kept.
# Tried on the recipe without the warmup (2 seeds, the loss at 170/180 against the recipe's
# 1.8584/1.8426 and 1.8885/1.8675): embedding_learning_rate 1.2e-2 and 4e-2, muon_learning_rate
# 0.03 and 0.04, min_lr 0, cooldown '1-sqrt', cooldown_fraction 0.6, beta1 0.8, learning_rate
# 8e-3: none more than 0.01 better on both seeds (within seed noise).
#
# Issue 19's last step (the schedule's length x the cooldown's fraction, 3 seeds, each run stopping
# at val <= 1.88 on the whole validation split, checked every 10 iterations from 150):
#   nanogpt prepare --tokenizer=char --input=../shared/data/tinyshakespeare.txt --out_dir=data/shakespeare_char
#   nanogpt sweep config/sweep_speedrun_cpu.py && nanogpt report out-sweep-speedrun-cpu
# Read the time to target from each run's last metrics.jsonl record (target_iter, wall_s, tokens),
# or the `target val loss` line of its train.log; nothing else may run on the machine meanwhile.
# Its result (2026-11-25, seeds 1337-1339): 170 iterations reach 1.88 on 1 seed of 3 (the others
# end at 1.884-1.888); 180 iterations on 3 of 3 (at 170, 180, 180), cooldown 0.4 and 0.5 alike
# (final losses within 0.002). Kept: 180 iterations, cooldown 0.4, the whole-split check from 170.
#
# Earlier steps of the search (one to three seeds each, iterations to reach 1.88; the base then
# had 200 iterations, batch 32, context 64):
#   head tied to wte vs untied                    tied reaches ~20 iterations sooner (kept: tied)
#   max_iters 200 / 180 / 160                     170-180 / 170-180 / reached on 1 seed of 2
#   batch 40 x 160 iters, batch 48 x 140 iters    150-160 / 130 (more tokens, slower steps)
#   context 32 x batch 64, 48 x 42, 128 x 16, 256 missed or later than context 64 x batch 32
#   3 layers; 6 layers at n_embd 96               missed; 180 (slower steps)
#   Newton-Schulz 4 steps instead of 5            no fewer iterations at batch 32
#   Muon lr 0.03; AdamW lr 6e-3                   no sooner than 0.02 / 4e-3

base = 'speedrun_shakespeare_char_cpu.py'
out_dir = 'out-sweep-speedrun-cpu'
# the ninth step's grid (the whole split every 5 from 105 to the end, 8 search seeds)
seeds = 8
stop_at_target = False
target_eval_from = 105
target_eval_interval = 5

model_recipe = ''
model_weights = '--ema_decay=0'
model_ema90_from100 = '--ema_from=100'
model_ema90_from80 = '--ema_from=80'
model_ema93_from90 = '--ema_decay=0.93'
model_ema85_from100 = '--ema_decay=0.85 --ema_from=100'
model_lr4 = '--learning_rate=4e-3'
model_lr6 = '--learning_rate=6e-3 --min_lr=6e-4'
model_mlr25 = '--muon_learning_rate=0.025'

optim_default = ''
