// SampleConfig validation.
#include "sample/sample_config.h"

#include "core/check.h"

namespace nanogpt {

void SampleConfig::validate() const {
  CHECK(num_samples >= 1, "num_samples = {}: expected >= 1", num_samples);
  CHECK(max_new_tokens >= 0, "max_new_tokens = {}: expected >= 0", max_new_tokens);
  CHECK(temperature >= 0, "temperature = {}: expected >= 0 (0 = greedy)", temperature);
  CHECK(top_k >= 0, "top_k = {}: expected >= 0 (0 = off)", top_k);
  CHECK(top_p > 0 && top_p <= 1, "top_p = {}: expected 0 < top_p <= 1 (1 = off)", top_p);
  CHECK(threads >= 0, "threads = {}: expected >= 0", threads);
  CHECK(device == "cpu" || device == "cuda" || device == "cuda:0",
        "device = '{}': expected 'cpu' or 'cuda' (the first NVIDIA GPU; 'cuda:0' names it too)",
        device);
  CHECK(dtype == "float32" || dtype == "bfloat16",
        "dtype = '{}': expected 'float32' or 'bfloat16' (the GPU's sampling precision)", dtype);
  CHECK(device == "cpu" || kv_cache,
        "kv_cache = False with device = '{}': the GPU samples with the KV cache only (drop "
        "--kv_cache=False, or sample on the CPU)",
        device);
}

}  // namespace nanogpt
