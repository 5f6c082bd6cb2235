# The README's main job: a small character-level GPT on the Brown Corpus (about 6 M characters),
# a few minutes on a 2-core machine. scripts/quickstart.sh prepares data/brown_char first.

out_dir = 'out-quickstart'
dataset = 'brown_char'
eval_interval = 250
eval_iters = 20
log_interval = 25
always_save_checkpoint = True

batch_size = 16
block_size = 128
gradient_accumulation_steps = 1

n_layer = 4
n_head = 4
n_embd = 192
dropout = 0.0

learning_rate = 2e-3
max_iters = 1500
lr_decay_iters = 1500
min_lr = 2e-4
beta2 = 0.99
warmup_iters = 100

# the fastest precision that is safe here: bfloat16 where the CPU multiplies bf16 natively
# (AVX512_BF16 or AMX), else float32; the log says which it chose
dtype = 'auto'
