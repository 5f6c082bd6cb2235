# The last step of the search behind config/speedrun_shakespeare_char_cpu.py (issue 19, the
# CPU-recipe track): the schedule's length x the cooldown's fraction, 3 seeds, each run stopping
# at val <= 1.88 on the whole validation split, checked every 10 iterations from 150.
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
seeds = 3
target_eval_from = 150
target_eval_interval = 10

model_i170 = '--max_iters=170 --lr_decay_iters=170'
model_i180 = '--max_iters=180 --lr_decay_iters=180'

optim_cd40 = '--cooldown_fraction=0.4'
optim_cd50 = '--cooldown_fraction=0.5'
