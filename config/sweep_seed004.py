# Seed 004's experiment ("Exploring Memory and Compute in nanoGPT") on this CPU, as one command:
#   nanogpt prepare --tokenizer=char --input=../shared/data/tinyshakespeare.txt --out_dir=data/shakespeare_char
#   nanogpt sweep config/sweep_seed004.py && nanogpt report out-sweep-seed004
# 4 model variations x 6 optimizations x 3 seeds = 72 runs. Seed 004 ran nanoGPT's baby GPT
# (6 layers, 384 wide, context 256, batch 64, 5000 iterations) once per cell on an A100; here the
# base is nanoGPT's CPU recipe for the same data (4 layers, 128 wide, context 64) at batch 16,
# sized so the grid takes under an hour on a 2-core machine: it took 36 minutes on 2026-11-23
# (results and the comparison with seed 004 claim by claim: docs/experiments.md).

base = 'train_shakespeare_char_cpu.py'
out_dir = 'out-sweep-seed004'
seeds = 3
target_loss = 2.3

# every run (seed 004's batch of 64 -> 16 here; its /4 reduction -> 4)
batch_size = 16
gradient_accumulation_steps = 1
max_iters = 500
lr_decay_iters = 500
warmup_iters = 50
eval_interval = 50
eval_iters = 10
log_interval = 10
always_save_checkpoint = True

# model variations: seed 004's "hyperparameters"
model_default = ''
model_layers_x2 = '--n_layer=8'
model_context_x2 = '--block_size=128'
model_embedding_x2 = '--n_embd=256'

# optimizations
optim_none = ''
optim_sgd_cosine = '--optimizer=sgd --momentum=0.9 --learning_rate=0.05 --min_lr=0.005 --weight_decay=0.0'
optim_float16 = '--dtype=float16'
optim_bfloat16 = '--dtype=bfloat16'
optim_batch_div4 = '--batch_size=4'
optim_grad_accum = '--batch_size=4 --gradient_accumulation_steps=4'
