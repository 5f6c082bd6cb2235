// TrainConfig: every key of `nanogpt train` (nanoGPT's names and defaults), with the model and
// optimizer keys nested in. Each key is declared once in visit(): parsing, --help, printing the
// effective config and saving it into checkpoints all come from that one list.
#pragma once

#include <cstdint>
#include <string>

#include "model/model_config.h"
#include "optim/optim_config.h"
#include "train/context_schedule.h"

namespace nanogpt {

struct TrainConfig {
  // I/O
  std::string out_dir = "out";
  int64_t eval_interval = 2000;
  int64_t log_interval = 1;
  int64_t eval_iters = 200;
  bool eval_only = false;
  bool eval_at_start = true;
  // the weights' moving average (train/weight_ema.h)
  double ema_decay = 0;
  int64_t ema_from = 0;
  // time to target (train/time_to_target.h)
  double target_loss = 0;
  int64_t target_eval_interval = 100;
  int64_t target_eval_from = 0;
  bool stop_at_target = false;
  bool always_save_checkpoint = true;
  std::string init_from = "scratch";
  // data
  std::string dataset = "openwebtext";
  std::string data_dir = "";
  int64_t gradient_accumulation_steps = 40;
  int64_t batch_size = 12;
  std::string data_mode = "auto";
  std::string sampling = "random";
  int64_t context_warmup_iters = 0;  // train/context_schedule.h
  int64_t context_warmup_start = 64;
  // model and optimizer
  ModelConfig model;
  OptimConfig optim;
  // run
  int64_t max_iters = 600000;
  double max_wall_minutes = 0;  // 0: no limit
  int64_t seed = 1337;
  std::string dtype = "float32";
  std::string attention = "flash";
  std::string kernel_choice = "auto";
  bool fused = true;
  bool activation_checkpointing = false;
  int64_t recompute = 2;
  bool fused_mlp = false;
  int64_t threads = 0;
  bool profile = false;
  // data-parallel (mpirun -np N)
  int64_t zero_stage = 0;
  double comm_timeout = 600;
  std::string rendezvous;  // several GPUs without mpirun: how ranks meet (distributed/rendezvous.h)
  double bucket_cap_mb = 25;
  // accepted for nanoGPT compatibility, no effect here
  std::string device = "cpu";
  bool compile = true;
  std::string backend = "nccl";
  bool wandb_log = false;
  std::string wandb_project = "owt";
  std::string wandb_run_name = "gpt2";

  template <typename Visitor>
  void visit(Visitor&& v) {
    v("out_dir", out_dir, "directory for the checkpoint and metrics.jsonl");
    v("eval_interval", eval_interval, "evaluate train/val loss every this many iterations");
    v("log_interval", log_interval, "print a log line every this many iterations");
    v("eval_iters", eval_iters, "batches per split in each evaluation");
    v("eval_only", eval_only, "evaluate once and exit");
    v("eval_at_start", eval_at_start,
      "the train/val evaluation at the run's first iteration (nanoGPT's step 0); False skips it "
      "(time-to-target runs, where the whole-split evaluations are what count); the evaluations "
      "every eval_interval after it and at the end are kept");
    v("ema_decay", ema_decay,
      "> 0: keep an exponential moving average of the weights (avg = ema_decay * avg + (1 - "
      "ema_decay) * weights after each step from ema_from on) and run every evaluation (sampled "
      "and whole-split) on it; checkpoints keep it as optimizer state 'ema' (model.safetensors "
      "holds the weights being trained). 0 = off");
    v("ema_from", ema_from,
      "with ema_decay: the first iteration whose weights enter the average (it starts as the "
      "weights after the step before it; 0: the initial weights)");
    v("target_loss", target_loss,
      "time to target: > 0 evaluates the loss on the whole validation split (every token a "
      "target once) every target_eval_interval iterations and at the end, and reports the wall "
      "time (full evaluations counted, and stated separately), tokens and iteration at which it "
      "first reached <= target_loss (log and metrics.jsonl); 0 = off");
    v("target_eval_interval", target_eval_interval,
      "with target_loss > 0: iterations between full-validation evaluations (>= 1)");
    v("target_eval_from", target_eval_from,
      "with target_loss > 0: the first full evaluation's iteration, the next ones every "
      "target_eval_interval after it (none before it but the last): a run that cannot be near "
      "the target yet spends no time evaluating (0 = from the start)");
    v("stop_at_target", stop_at_target,
      "with target_loss > 0: end the run (saving the checkpoint, as at max_iters) right after "
      "the full evaluation that reaches target_loss");
    v("always_save_checkpoint", always_save_checkpoint,
      "save at every eval (False: only when val loss improves)");
    v("init_from", init_from,
      "'scratch', 'resume' (from out_dir), or a path to a HF model.safetensors or llm.c .bin");
    v("dataset", dataset, "dataset name: data is read from data/<dataset> unless data_dir is set");
    v("data_dir", data_dir,
      "directory holding train.bin, val.bin and meta.json (overrides dataset)");
    v("gradient_accumulation_steps", gradient_accumulation_steps,
      "micro-batches per optimizer step (loss scaled by 1/steps)");
    v("batch_size", batch_size, "sequences per micro-batch B");
    v("data_mode", data_mode,
      "'auto' (preload the token files up to 1 GiB and a quarter of the memory available, else "
      "mmap), 'preload' (read them into RAM) or 'mmap' (map them; RSS stays bounded)");
    v("sampling", sampling, "'random' (nanoGPT offsets) or 'sequential' (llm.c contiguous)");
    v("context_warmup_iters", context_warmup_iters,
      "sequence-length warmup: over the first this many iterations the model trains on shorter "
      "contexts, from context_warmup_start doubling at equal shares of them up to block_size "
      "(each (B, block_size) batch cut into B * block_size / T' sequences of T': the same "
      "tokens per step); 0 = off, block_size throughout");
    v("context_warmup_start", context_warmup_start,
      "with context_warmup_iters > 0: the first context (block_size / it a power of two)");
    model.visit(v);
    optim.visit(v);
    v("max_iters", max_iters, "total optimizer steps");
    v("max_wall_minutes", max_wall_minutes,
      "stop before the step that would end past this many minutes of this process (a scheduler's "
      "time limit), writing the checkpoint as on SIGTERM; exit status 75; 0: no limit");
    v("seed", seed, "random seed (init, batches, dropout); under mpirun rank r reads micro-batches r, r+N, ... "
      "of the one stream this seed defines");
    v("dtype", dtype,
      "'auto' (bfloat16 where the CPU multiplies bf16 natively, else float32), 'float32', "
      "'bfloat16' or 'float16': storage of matmul weights copies and activations "
      "(fp32 master weights, optimizer state and statistics; float16 adds dynamic loss scaling)");
    v("attention", attention,
      "'flash' (tiled kernel, no T x T matrix, memory linear in T) or 'naive' (nanoGPT's "
      "non-flash path: the (B, n_head, T, T) probabilities materialized and kept for backward)");
    v("kernel_choice", kernel_choice,
      "where a product has several ways (bfloat16 attention: 'native' bf16 dot products, "
      "'widened' to float32 FMAs, or 'onednn' block products as oneDNN matmuls, AMX where the "
      "CPU has it; float32 products small enough for our tile GEMM, nanoGPT's CPU recipe and "
      "its Newton-Schulz: the tiles, or oneDNN): 'auto' times each at this run's shapes at "
      "start-up and takes the fastest (kept on resume), or force one ('onednn' forces oneDNN "
      "in both families, 'native' and 'widened' our tile GEMM for the small products)");
    v("fused", fused,
      "True: fused kernels (each residual add in one pass with the LayerNorm it feeds; the "
      "classifier in row chunks fused with its backward, never holding the logits; the optimizer "
      "step in two passes over memory: gradient norm, then unscale x clip + update + 16-bit "
      "weight copy + zeroed gradients); False: the unfused paths (separate residual add and "
      "LayerNorm; the classifier over all rows at once, the (B*T, vocab) logits "
      "materialized; one optimizer pass per stage). Same results either way; LayerNorm/GELU "
      "recompute in the backward is on in both");
    v("fused_mlp", fused_mlp,
      "with fused=True: bias + GELU in the epilogue of the MLP's fc matmul and the GELU "
      "derivative in the epilogue of its backward, row block by row block (same results). Off by "
      "default: slower on a shared 2-core machine (docs/benchmarks.md); try it on yours. Small "
      "float32 models (nanoGPT's CPU recipe) fuse the MLP with fused=True either way: there each "
      "fused op is one parallel region of the small GEMM with the unfused ops' exact floats (where "
      "their small products run on the tiles: kernel_choice)");
    v("activation_checkpointing", activation_checkpointing,
      "True: keep only each block's output in the forward and run each block's forward again "
      "(up to its MLP's first matmul) just before its backward: activation memory of one block "
      "plus the residual stream per layer, for about a quarter more compute (same results, bit "
      "for bit); False (the default): keep what the backward reads for every block");
    v("recompute", recompute,
      "what the backward computes again instead of keeping (llm.c's -r): 2 (the default) each "
      "block's LayerNorm outputs and GELU output, the least memory; 1 the GELU output only (the "
      "LayerNorm outputs kept: 2 C values a row a layer more); 0 neither (4 C more again), the "
      "fastest. Same results bit for bit; below 2 not with activation_checkpointing");
    v("threads", threads,
      "CPU threads per rank; 0 = all cores (under mpirun: the cores the rank is bound to, or the "
      "cores shared among the ranks of the host)");
    v("profile", profile,
      "time every op; at the end print where step time went per op class, then per op (share, "
      "GFLOP/s or GB/s, % of the peaks measured here)");
    v("zero_stage", zero_stage,
      "under mpirun: 0 = plain data-parallel; 1 = ZeRO-1 (optimizer state sharded across ranks; "
      "with dtype bfloat16/float16 the float32 master weights too)");
    v("comm_timeout", comm_timeout,
      "several ranks (mpirun, or several GPUs): seconds a rank waits for its peers before ending "
      "the job with an error naming the rank");
    v("rendezvous", rendezvous,
      "--device=cuda on several GPUs without mpirun (torchrun's RANK / WORLD_SIZE / LOCAL_RANK, or "
      "Slurm's srun): how the ranks meet to start NCCL: '' = TCP at MASTER_ADDR:MASTER_PORT "
      "(127.0.0.1:29500 without them), 'tcp:HOST:PORT', or 'file:DIR' (a shared directory)");
    v("bucket_cap_mb", bucket_cap_mb,
      "under mpirun: MB of gradients per all-reduce bucket, started during the backward");
    v("device", device,
      "'cpu' (default), or 'cuda' / 'cuda:0': train on the first NVIDIA GPU (a build with the CUDA "
      "backend; docs/guide/gpu.md)");
    v("compile", compile, "accepted for nanoGPT configs; kernels are always fused here");
    v("backend", backend, "accepted for nanoGPT configs; no effect");
    v("wandb_log", wandb_log, "accepted for nanoGPT configs; no effect (see metrics.jsonl)");
    v("wandb_project", wandb_project, "accepted for nanoGPT configs; no effect");
    v("wandb_run_name", wandb_run_name, "accepted for nanoGPT configs; no effect");
  }

  // The sequence-length warmup of these keys (context_schedule.h).
  ContextSchedule context_schedule() const {
    return {model.block_size, context_warmup_iters, static_cast<int>(context_warmup_start)};
  }
  // data_dir if set, else data/<dataset>.
  std::string resolved_data_dir() const { return data_dir.empty() ? "data/" + dataset : data_dir; }
  // Throws nanogpt::Error naming the key and what to change (model.vocab_size may still be 0).
  void validate() const;
  // dtype 'auto' -> 'bfloat16' or 'float32' for this CPU (choose_auto_dtype); returns the log line
  // that says what was chosen and why, or "" when dtype was explicit (left as it is).
  std::string resolve_auto_dtype();
};

}  // namespace nanogpt
