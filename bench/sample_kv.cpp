// W7: sampling speed with and without the KV cache on GPT-2 124M shapes (random weights; the
// speed does not depend on them). Usage: bench_sample_kv [new_tokens=512] [no_cache_tokens=64]
// The no-cache path re-runs the whole context per token (nanoGPT's generate), so it is timed on
// fewer tokens by default; both print tokens/s for the same prompt.
#include <fmt/format.h>

#include <cstdlib>

#include "core/timer.h"
#include "kernels/cpu_backend.h"
#include "model/gpt.h"
#include "sample/generator.h"

using namespace nanogpt;

int main(int argc, char** argv) {
  int new_tokens = argc > 1 ? std::atoi(argv[1]) : 512;
  int no_cache_tokens = argc > 2 ? std::atoi(argv[2]) : 64;
  ModelConfig cfg;
  cfg.vocab_size = 50257;
  cfg.block_size = 1024;
  GPT model(cfg);
  model.init_weights(1);
  CpuBackend ctx;
  std::vector<int> prompt = {50256};
  for (bool cached : {true, false}) {
    int n = cached ? new_tokens : no_cache_tokens;
    TokenSampler sampler({1.0, 200, 1.0});
    Rng rng(42);
    GenerateOptions opt;
    opt.max_new_tokens = n;
    opt.use_kv_cache = cached;
    Timer t;
    auto ids = generate(model, ctx, prompt, sampler, rng, opt);
    double s = t.seconds();
    fmt::print(
        "{{\"bench\": \"sample_124M\", \"kv_cache\": {}, \"new_tokens\": {}, \"seconds\": {:.3f}, "
        "\"tokens_per_s\": {:.2f}}}\n",
        cached, ids.size() - prompt.size(), s, static_cast<double>(ids.size() - prompt.size()) / s);
  }
  return 0;
}
