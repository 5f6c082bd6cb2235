// SampleConfig: every key of `nanogpt sample` (nanoGPT's sample.py names plus top_p, kv_cache and
// stop_at_eot). Each key is declared once in visit().
#pragma once

#include <cstdint>
#include <string>

namespace nanogpt {

struct SampleConfig {
  std::string out_dir = "out";
  std::string init_from = "resume";
  std::string start = "\n";
  int64_t num_samples = 10;
  int64_t max_new_tokens = 500;
  double temperature = 0.8;
  int64_t top_k = 200;
  double top_p = 1.0;
  int64_t seed = 1337;
  bool kv_cache = true;
  bool stop_at_eot = false;
  std::string data_dir = "";
  std::string vocab_dir;  // empty: the GPT-2 vocabulary built into the binary
  int64_t threads = 0;
  std::string device = "cpu";
  std::string dtype = "float32";
  bool ema = true;

  template <typename Visitor>
  void visit(Visitor&& v) {
    v("out_dir", out_dir, "run directory whose checkpoint (out_dir/ckpt) is sampled");
    v("init_from", init_from,
      "'resume' (out_dir's checkpoint) or a path to a HF model.safetensors / llm.c .bin");
    v("start", start, "prompt text, or FILE:path to read it from a file");
    v("num_samples", num_samples, "number of samples to draw");
    v("max_new_tokens", max_new_tokens, "tokens generated per sample");
    v("temperature", temperature, "1.0 = as trained, < 1 less random, 0 = greedy");
    v("top_k", top_k, "keep only the k most likely tokens; 0 = off");
    v("top_p", top_p, "keep the smallest set of tokens with this much probability; 1 = off");
    v("seed", seed, "random seed of the draws");
    v("kv_cache", kv_cache,
      "reuse keys/values of earlier tokens (O(T) per token, not a full pass)");
    v("stop_at_eot", stop_at_eot, "end a sample at the end-of-text token (GPT-2 BPE)");
    v("data_dir", data_dir, "dataset whose meta.json gives the tokenizer (default: the run's)");
    v("vocab_dir", vocab_dir,
      "GPT-2 vocabulary (encoder.json, vocab.bpe) for weights files; empty = built in");
    v("threads", threads, "CPU threads; 0 = all cores");
    v("device", device,
      "'cpu' (default), or 'cuda' / 'cuda:0': sample on the first NVIDIA GPU (with the KV cache)");
    v("dtype", dtype, "--device=cuda: 'float32' (default) or 'bfloat16' matmuls of the full forward "
      "(kv_cache=False); the KV-cache path reads the float32 weights");
    v("ema", ema,
      "a checkpoint of a run that kept the weights' moving average (ema_decay): sample from the "
      "average (True, what its evaluations ran on) or from the trained weights (False)");
  }

  void validate() const;
};

}  // namespace nanogpt
