# The search behind config/speedrun_shakespeare_char_cpu.py (issue 19, the CPU-recipe track):
# batch size (with the schedule's length scaled to about the same tokens) x Muon's and AdamW's
# learning rates, one seed, each run stopping at val <= 1.88 on the whole validation split.
#   nanogpt prepare --tokenizer=char --input=../shared/data/tinyshakespeare.txt --out_dir=data/shakespeare_char
#   nanogpt sweep config/sweep_speedrun_cpu.py && nanogpt report out-sweep-speedrun-cpu
# Read the time to target from each run's last metrics.jsonl record (wall_s, tokens), or the
# `target val loss` line of its train.log; nothing else may run on the machine meanwhile.

base = 'speedrun_shakespeare_char_cpu.py'
out_dir = 'out-sweep-speedrun-cpu'
seeds = 1

model_b16 = '--batch_size=16 --max_iters=560 --lr_decay_iters=560 --target_eval_from=300 --target_eval_interval=40'
model_b24 = ''
model_b32 = '--batch_size=32 --max_iters=300 --lr_decay_iters=300 --target_eval_from=150 --target_eval_interval=20'

optim_mu02 = '--muon_learning_rate=0.02'
optim_mu03 = ''
optim_mu05 = '--muon_learning_rate=0.05 --learning_rate=6e-3 --min_lr=6e-4'
