# A 2 x 2 sweep that finishes in seconds: checks `nanogpt sweep` and `nanogpt report` end to end.
# Needs the char Shakespeare dataset:
#   nanogpt prepare --tokenizer=char --input=../shared/data/tinyshakespeare.txt --out_dir=data/shakespeare_char
#   nanogpt sweep config/sweep_smoke.py && nanogpt report out-sweep-smoke

base = 'smoke.py'
out_dir = 'out-sweep-smoke'
seeds = 1
target_loss = 3.6

# every run
max_iters = 30
lr_decay_iters = 30
eval_interval = 10
log_interval = 1

# model variations
model_default = ''
model_layers_x2 = '--n_layer=4'

# optimization variations
optim_none = ''
optim_sgd_cosine = '--optimizer=sgd --learning_rate=0.05 --min_lr=0.005 --weight_decay=0.0'
