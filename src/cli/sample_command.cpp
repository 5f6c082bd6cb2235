// `nanogpt sample`: generate text from a checkpoint or weights file, like nanoGPT's sample.py.
#include <fmt/format.h>
#include <omp.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/commands.h"
#include "core/check.h"
#include "core/config.h"
#include "core/timer.h"
#include "kernels/cpu_backend.h"
#include "model/gpt.h"
#include "sample/generator.h"
#if NANOGPT_WITH_CUDA
#include "gpu/cuda_training.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/cuda_context.h"
#endif
#include "sample/sample_config.h"
#include "tokenizer/gpt2_tokenizer.h"
#include "tokenizer/tokenizer.h"
#include "train/model_source.h"

namespace nanogpt::cli {
namespace {

std::unique_ptr<Tokenizer> tokenizer_for(const SampleConfig& config, const ModelSource& src) {
  std::string data_dir = config.data_dir;
  if (data_dir.empty() && src.state.is_object() && src.state.contains("data_dir")) {
    data_dir = src.state["data_dir"].get<std::string>();
  }
  // nanoGPT's ckpt.pt names its dataset; sample.py looks in data/<dataset> too.
  if (data_dir.empty() && !src.dataset.empty()) data_dir = "data/" + src.dataset;
  if (!data_dir.empty() && std::filesystem::exists(std::filesystem::path(data_dir) / "meta.json")) {
    return load_tokenizer(data_dir);
  }
  CHECK(src.config.vocab_size >= 50257,
        "no tokenizer found for {}: the dataset's meta.json (data_dir '{}') is missing; give "
        "--data_dir=<the dataset directory the model was trained on>",
        src.origin, data_dir);
  return std::make_unique<Gpt2Tokenizer>(config.vocab_dir);
}

std::string read_start(const std::string& start) {
  if (start.rfind("FILE:", 0) != 0) return start;
  std::string path = start.substr(5);
  std::ifstream in(path, std::ios::binary);
  CHECK(in.good(), "start = '{}': cannot read the prompt file '{}'", start, path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

std::string sample_help() {
  return "usage: nanogpt sample [--out_dir=DIR | --init_from=FILE] [--start=TEXT|FILE:path] ...\n"
         "Generates text like nanoGPT's sample.py. Keys:\n" +
         format_keys_help(describe_keys<SampleConfig>());
}

int sample_command(const Args& args) {
  SampleConfig config;
  apply_assignments(config, parse_command_line(args));
  config.validate();
  if (config.threads > 0) omp_set_num_threads(static_cast<int>(config.threads));
  require_checkpoint(config.init_from, config.out_dir, "sample");
  ModelSource src =
      load_model_source(config.init_from, config.out_dir,
                        config.ema ? CheckpointWeights::kAverage : CheckpointWeights::kTrained);
  if (src.average) {
    fmt::print(stderr,
               "weights: the run's moving average of its weights (as its evaluations; "
               "--ema=False for the trained weights)\n");
  }
  auto tokenizer = tokenizer_for(config, src);
  // The one model, on the CPU or on --device=cuda in the GPU's memory (the KV cache there too).
  std::unique_ptr<Backend> backend;
  if (config.device == "cpu") {
    backend = std::make_unique<CpuBackend>();
  } else {
#if NANOGPT_WITH_CUDA
    backend = std::make_unique<CudaBackend>();  // throws naming why when no GPU is usable
    const int cc = cuda::device_compute_capability();
    CHECK(config.dtype != "bfloat16" || cc >= kMinBfloat16ComputeCapability,
          "--device=cuda --dtype=bfloat16: {} (sm_{}) has no bfloat16 tensor cores (sm_{} or "
          "later); sample with --dtype=float32",
          cuda::device_name(), cc, kMinBfloat16ComputeCapability);
#else
    fail(
        "--device={}: this nanogpt was built without the CUDA backend (no nvcc was found when "
        "it was built); build it on a machine with a CUDA toolkit (docs/guide/gpu.md), or sample "
        "with --device=cpu",
        config.device);
#endif
  }
  const bool on_device = !backend->host_addressable();
  GPT model(src.config, nullptr, MasterWeights::kInModel, on_device ? backend.get() : nullptr);
  backend->upload(model.params().data(), src.params.data(), src.params.size() * sizeof(float));
  if (on_device) {  // the full forward (kv_cache=False) runs its matmuls in `dtype` on the GPU
    DType dtype = DType::kF32;
    parse_dtype(config.dtype, dtype);
    model.set_dtype(dtype);
  }

  const std::string start = read_start(config.start);
  std::vector<TokenId> encoded = tokenizer->encode(start);
  std::vector<int> prompt(encoded.begin(), encoded.end());
  if (prompt.empty() && tokenizer->eot_token() >= 0) prompt.push_back(tokenizer->eot_token());
  TokenSampler sampler({config.temperature, static_cast<int>(config.top_k), config.top_p});
  Rng rng(static_cast<uint64_t>(config.seed));
  GenerateOptions opt;
  opt.max_new_tokens = static_cast<int>(config.max_new_tokens);
  opt.use_kv_cache = config.kv_cache;
  opt.stop_token = config.stop_at_eot ? tokenizer->eot_token() : -1;

  int64_t generated = 0;
  Timer timer;
  for (int64_t s = 0; s < config.num_samples; ++s) {
    std::fputs(start.c_str(), stdout);
    auto print = [&](int id) {
      ++generated;
      TokenId t = static_cast<TokenId>(id);
      if (id == opt.stop_token) return;
      std::fputs(tokenizer->decode(std::span<const TokenId>(&t, 1)).c_str(), stdout);
      std::fflush(stdout);
    };
    generate(model, *backend, prompt, sampler, rng, opt, print);
    std::fputs("\n---------------\n", stdout);
    std::fflush(stdout);
  }
  double secs = timer.seconds();
  std::fprintf(stderr, "sampled %lld tokens in %.2f s (%.1f tokens/s, kv_cache %s, %s) from %s\n",
               static_cast<long long>(generated), secs, secs > 0 ? generated / secs : 0.0,
               config.kv_cache ? "on" : "off", on_device ? "cuda" : "cpu", src.origin.c_str());
  return 0;
}

}  // namespace nanogpt::cli
