# A tiny run that finishes in seconds: checks the whole pipeline (data, train, eval, checkpoint).

out_dir = 'out-smoke'
dataset = 'shakespeare_char'
batch_size = 4
gradient_accumulation_steps = 1
block_size = 32
n_layer = 2
n_head = 2
n_embd = 32
dropout = 0.0
max_iters = 20
lr_decay_iters = 20
warmup_iters = 2
learning_rate = 1e-3
min_lr = 1e-4
eval_interval = 10
eval_iters = 2
log_interval = 5
always_save_checkpoint = True
