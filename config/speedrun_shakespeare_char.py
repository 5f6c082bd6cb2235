# The CPU speedrun's baby-GPT track (issue 19): character-level tinyshakespeare to a validation
# loss <= 1.47 on the WHOLE validation split (nanoGPT's baby GPT, 6L/6H/384 at T 256, B 64,
# dropout 0.2, reaches 1.4697 after 5000 iters). Same data and split as nanoGPT. The CPU-recipe
# track's techniques (docs/speedrun.md) on a narrower model than nanoGPT's: 256 wide (4.75M
# parameters, ~half the step) learns no slower per token here than 384 wide, and overfits
# less, so it takes dropout 0.1. Issue 33: batches of 32 (not 64) reach it after ~30% fewer
# tokens, at about the same tokens per second, and the sequence-length warmup (contexts 64 and
# 128 over the first 200 iterations) gets there a little sooner still. Issue 33, second step: 4
# layers instead of 6 take ~30-40% more tokens (7.0M-7.6M against 5.3M) at ~1.3x the tokens per
# second at context 256 (~0.48 s against ~0.62 s per step): about the same wall time (7.6 min
# against 7.4, docs/speedrun.md), with a 950-iteration warmup-stable-decay schedule (cooldown from
# 570) that the 3 seeds reached at 850-925. Third step: no dropout on the attention weights
# (attn_dropout = 0; dropout 0.1 stays on the embeddings and residual paths): the per-score masks
# were ~2-4% of the step (~405-413 -> ~397 ms, docs/benchmarks.md), and seed 1337 reached at
# iteration 925 either way (the val losses within ~0.01 of each other from 600 on); and the embedding's AdamW rate 5x the
# others' (embedding_learning_rate 1e-2): seed 1337 reached at 800 instead of 925, seed 1338 at 875
# (the 8cf25c2 recipe: 850). Measured (docs/speedrun.md): 3/3 seeds at 775-875, 6.0 min; but of
# the 5 held-out seeds one (9001) ended at 1.4711: not yet a recipe every seed reaches. Fourth
# step: the search seeds 1337-1341 showed that tail too (seed 1340 ended 0.006 under the target),
# and a longer schedule alone moves the reach with the cooldown's end (1050 iterations: seed 1340
# reached at 975 instead of 875). The cooldown's shape 1-sqrt (the rate falls faster at first)
# brought seed 1341's reach from 900 to 800 and left 1340's at 875 and both end values where
# they were, so the schedule now takes 1000 iterations with a 1-sqrt cooldown: margin at the end
# for the slow seeds, paid for by the earlier reach of the others. Measured (docs/speedrun.md, a
# faster VM, peaks 545 / 994 GFLOP/s): 3/3 seeds at 750-825, 4.1 min; held-out 4/5 again: seed
# 9001 got no lower than 1.4714 (at 1000; 950 linear: 1.4711), its whole-split loss ~0.01 above
# the other held-out seeds' from 775 on at like training losses (~1.23 at 800): the gap between
# train and validation, not the schedule's length, is the lever to try next.
# Fifth step (the ablation's lead: warmup + cosine reached 1.47 sooner than WSD on search seeds 1338
# and 1340 and no later on 1337 and 1339): a cosine schedule over 1100 iterations. Its rate falls
# from the start of the run, so the typical seed reaches sooner (over 1000 iterations, seeds
# 1337-1340 at 775 / 725 / 750 / 775 against WSD's 775 / 825 / 750 / 875; over 1100, 1340 / 1341 /
# 1342 at 750 / 925 / 850), and the longer schedule keeps the slow seeds' end margin (1341 / 1342
# end at 1.4603 / 1.4645; 1341 ended at 1.4666 after a 1000-iteration cosine); the tail seeds hover
# at ~1.465-1.47 from 850 on whatever the schedule: the model's floor at these tokens is near the
# target. Measured (docs/speedrun.md, f9ff922, the fast VM, peaks 551 / 1023 GFLOP/s): 3/3 seeds at
# 725-875, 4.1 min; the 5 held-out seeds all reached it (775-875, 4.4 min), 9001 included (at 875).
# The search: config/sweep_speedrun_baby.py.

out_dir = 'out-speedrun-char'
dataset = 'shakespeare_char'
dtype = 'auto'

n_layer = 4
n_head = 4
n_embd = 256
block_size = 256
dropout = 0.1
attn_dropout = 0.0
norm = 'rmsnorm'
position = 'rotary'
qk_norm = True
activation = 'relu2'
tie_embeddings = False
zero_init_proj = True
logit_softcap = 30.0

batch_size = 32
gradient_accumulation_steps = 1
context_warmup_iters = 200
context_warmup_start = 64
optimizer = 'muon'
muon_learning_rate = 0.02
learning_rate = 2e-3
embedding_learning_rate = 1e-2
min_lr = 2e-4
beta2 = 0.99
weight_decay = 0.1
lr_schedule = 'cosine'
warmup_iters = 50
max_iters = 1100
lr_decay_iters = 1100

target_loss = 1.47
target_eval_from = 725
target_eval_interval = 25
stop_at_target = True
eval_interval = 5000
eval_iters = 1
log_interval = 50
always_save_checkpoint = False
