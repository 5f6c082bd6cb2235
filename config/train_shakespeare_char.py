# nanoGPT's train_shakespeare_char recipe: a baby GPT (6 layers, 6 heads, 384 wide, context 256)
# on character-level tinyshakespeare. Prepare the data first:
#   build/nanogpt prepare --tokenizer=char --input=../shared/data/tinyshakespeare.txt --out_dir=data/shakespeare_char

out_dir = 'out-shakespeare-char'
eval_interval = 250 # keep frequent because we'll overfit
eval_iters = 200
log_interval = 10 # don't print too too often

# we expect to overfit on this small dataset, so only save when val improves
always_save_checkpoint = False

dataset = 'shakespeare_char'
gradient_accumulation_steps = 1
batch_size = 64
block_size = 256 # context of up to 256 previous characters

# baby GPT model :)
n_layer = 6
n_head = 6
n_embd = 384
dropout = 0.2

learning_rate = 1e-3 # with baby networks can afford to go a bit higher
max_iters = 5000
lr_decay_iters = 5000 # make equal to max_iters usually
min_lr = 1e-4 # learning_rate / 10 usually
beta2 = 0.99 # make a bit bigger because number of tokens per iter is small

warmup_iters = 100 # not super necessary potentially

# the fastest precision that is safe here: bfloat16 where the CPU multiplies bf16 natively
# (AVX512_BF16 or AMX), else float32; the log says which it chose
dtype = 'auto'
