// Generation loops with and without the KV cache.
#include "sample/generator.h"

#include <algorithm>

#include "core/check.h"
#include "model/kv_cache.h"

namespace nanogpt {

namespace {

// The model as a stepper: GPT::forward_one into a KvCache in the model's memory.
class ModelStepper : public TokenStepper {
 public:
  ModelStepper(GPT& model, Backend& ops)
      : model_(model),
        ops_(ops),
        cache_(model.config(), model.config().block_size, nullptr,
               ops.host_addressable() ? nullptr : &ops) {}
  const ModelConfig& config() const override { return model_.config(); }
  void clear() override { cache_.clear(); }
  int length() const override { return cache_.length(); }
  void step(int token, int pos, float* logits_out) override {
    model_.forward_one(ops_, cache_, token, pos, logits_out);
  }

 private:
  GPT& model_;
  Backend& ops_;
  KvCache cache_;
};

std::vector<int> generate_full(GPT& model, Backend& ops, std::vector<int> ids,
                               TokenSampler& sampler, Rng& rng, const GenerateOptions& opt,
                               const std::function<void(int)>& on_token) {
  const ModelConfig& cfg = model.config();
  const int Vp = cfg.padded_vocab_size();
  const bool on_host = ops.host_addressable();
  std::vector<float> last(on_host ? 0 : Vp);  // off the host: the last row's logits, downloaded
  for (int n = 0; n < opt.max_new_tokens; ++n) {
    size_t start =
        ids.size() > static_cast<size_t>(cfg.block_size) ? ids.size() - cfg.block_size : 0;
    std::vector<int> window(ids.begin() + static_cast<std::ptrdiff_t>(start), ids.end());
    int T = static_cast<int>(window.size());
    model.forward(ops, window.data(), nullptr, 1, T, /*training=*/false);
    const float* row = model.logits() + static_cast<int64_t>(T - 1) * Vp;
    if (!on_host) {
      ops.download(last.data(), row, static_cast<size_t>(Vp) * sizeof(float));
      row = last.data();
    }
    int next = sampler.sample(row, cfg.vocab_size, rng);
    ids.push_back(next);
    if (on_token) on_token(next);
    if (next == opt.stop_token) break;
  }
  return ids;
}

}  // namespace

std::vector<int> generate_cached(TokenStepper& model, const std::vector<int>& prompt,
                                 TokenSampler& sampler, Rng& rng, const GenerateOptions& opt,
                                 const std::function<void(int)>& on_token) {
  CHECK(!prompt.empty(), "the prompt is empty: give at least one token (e.g. --start='\\n')");
  const ModelConfig& cfg = model.config();
  const int maxT = cfg.block_size;
  const int V = cfg.vocab_size;
  std::vector<int> ids = prompt;
  std::vector<float> logits(cfg.padded_vocab_size());
  // Feeds ids[from..] into the cache (positions 0..), leaving the logits of the last one.
  auto prefill = [&](size_t from) {
    model.clear();
    for (size_t i = from; i < ids.size(); ++i) {
      model.step(ids[i], static_cast<int>(i - from), logits.data());
    }
  };
  size_t window_start = ids.size() > static_cast<size_t>(maxT) ? ids.size() - maxT : 0;
  prefill(window_start);
  for (int n = 0; n < opt.max_new_tokens; ++n) {
    int next = sampler.sample(logits.data(), V, rng);
    ids.push_back(next);
    if (on_token) on_token(next);
    if (next == opt.stop_token || n + 1 == opt.max_new_tokens) break;
    if (model.length() == maxT) {  // context full: keep the last half block and go on
      window_start = ids.size() - std::max(1, maxT / 2);
      prefill(window_start);
    } else {
      model.step(next, model.length(), logits.data());
    }
  }
  return ids;
}

std::vector<int> generate(GPT& model, Backend& ops, const std::vector<int>& prompt,
                          TokenSampler& sampler, Rng& rng, const GenerateOptions& options,
                          const std::function<void(int)>& on_token) {
  CHECK(!prompt.empty(), "the prompt is empty: give at least one token (e.g. --start='\\n')");
  if (options.use_kv_cache) {
    ModelStepper stepper(model, ops);
    return generate_cached(stepper, prompt, sampler, rng, options, on_token);
  }
  return generate_full(model, ops, prompt, sampler, rng, options, on_token);
}

}  // namespace nanogpt
