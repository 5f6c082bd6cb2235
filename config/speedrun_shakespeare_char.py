# The CPU speedrun's baby-GPT track (issue 19): character-level tinyshakespeare to a validation
# loss <= 1.47 on the WHOLE validation split (nanoGPT's baby GPT, 6L/6H/384 at T 256, B 64,
# reaches 1.4697 after 5000 iters). Same data and split as nanoGPT. The CPU-recipe track's
# techniques (docs/speedrun.md) on nanoGPT's baby shape, with its dropout (this model overfits
# tinyshakespeare without it) and a schedule about a fifth of nanoGPT's length.

out_dir = 'out-speedrun-char'
dataset = 'shakespeare_char'
dtype = 'auto'

n_layer = 6
n_head = 6
n_embd = 384
block_size = 256
dropout = 0.2
norm = 'rmsnorm'
position = 'rotary'
qk_norm = True
activation = 'relu2'
tie_embeddings = False
zero_init_proj = True
logit_softcap = 30.0

batch_size = 64
gradient_accumulation_steps = 1
optimizer = 'muon'
muon_learning_rate = 0.02
learning_rate = 2e-3
min_lr = 2e-4
beta2 = 0.99
weight_decay = 0.1
lr_schedule = 'wsd'
cooldown_fraction = 0.4
warmup_iters = 50
max_iters = 1000
lr_decay_iters = 1000

target_loss = 1.47
target_eval_from = 400
target_eval_interval = 50
stop_at_target = True
eval_interval = 5000
eval_iters = 1
log_interval = 50
always_save_checkpoint = False
