# The search behind config/speedrun_shakespeare_char.py (issue 19, the baby-GPT track): the model's
# width with its dropout, and the schedule's length, one seed, each run stopping at val <= 1.47 on
# the whole validation split.
#   nanogpt prepare --tokenizer=char --input=../shared/data/tinyshakespeare.txt --out_dir=data/shakespeare_char
#   nanogpt sweep config/sweep_speedrun_baby.py && nanogpt report out-sweep-speedrun-baby
# Read the time to target from each run's last metrics.jsonl record (target_iter, wall_s, tokens),
# or the `target val loss` line of its train.log; nothing else may run on the machine meanwhile.
# The same runs were first made one at a time with `nanogpt train` and these keys (2026-11-26,
# seed 1337, AMD EPYC, 2 threads, bf16, 457 GFLOP/s fp32 peak):
#   w384_d20_i1000  nanoGPT's shape and dropout, every technique (the recipe until 2026-11-26):
#                   1.4785 at 600, reached at 650, 29.5 min, 10.65M tokens (2.64 s/step)
#   w256_d10_i1000  val 1.5333 / 1.4996 / 1.4764 / 1.4774 at 300 / 400 / 500 / 550, still in the
#                   stable phase (the 384-wide run: 1.5281 / 1.4911 at 400 / 500) at 1.3-1.4
#                   s/step: stopped at 550
#   w256_d10_i600   the cooldown from 360: 1.4934 / 1.4815 / 1.4653 at 425 / 450 / 475, reached
#                   at 475, 11.2 min, 7.8M tokens (1.35 s/step). Kept.
# Earlier (the 384-wide recipe): a 700-iteration schedule reached at 600 (27.0 min) against 650
# for 1000 iterations, so the schedule's length alone was not enough.

base = 'speedrun_shakespeare_char.py'
out_dir = 'out-sweep-speedrun-baby'
seeds = 1

model_w384_d20_i1000 = '--n_embd=384 --n_head=6 --dropout=0.2 --max_iters=1000 --lr_decay_iters=1000 --target_eval_interval=50'
model_w256_d10_i1000 = '--max_iters=1000 --lr_decay_iters=1000 --target_eval_from=300 --target_eval_interval=50'
model_w256_d10_i600 = ''

optim_default = ''
