# GPT-2 124M (12 layers, 12 heads, 768 wide, context 1024, vocab 50257 padded to 50304) on a GPT-2
# BPE dataset, nanoGPT's recipe: ~0.5M tokens per step (12 x 1024 x 40). On a 2-core CPU this is a
# recipe to read more than to run; scale batch_size / gradient_accumulation_steps to taste.
#   build/nanogpt prepare --tokenizer=gpt2 --input=my_corpus/ --out_dir=data/my_corpus

out_dir = 'out-gpt2'
dataset = 'openwebtext'

batch_size = 12
block_size = 1024
gradient_accumulation_steps = 5 * 8

n_layer = 12
n_head = 12
n_embd = 768
vocab_size = 50257
bias = False
dropout = 0.0

max_iters = 600000
lr_decay_iters = 600000
learning_rate = 6e-4
min_lr = 6e-5
warmup_iters = 2000
weight_decay = 1e-1
beta1 = 0.9
beta2 = 0.95
grad_clip = 1.0

eval_interval = 1000
eval_iters = 200
log_interval = 10

# the fastest precision that is safe here: bfloat16 where the CPU multiplies bf16 natively
# (AVX512_BF16 or AMX), else float32; the log says which it chose
dtype = 'auto'
