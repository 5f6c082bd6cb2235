// Fuzzes Hugging Face GPT-2 config.json reading (io/hf_gpt2: parse_hf_config): HF keys (n_layer,
// n_head, n_embd, n_positions, vocab_size, activation_function, layer_norm_epsilon) or our own
// "nanogpt_model_config". A config that is accepted must give a parameter table and must survive
// hf_config_json -> parse_hf_config unchanged.
#include "fuzz_util.h"
#include "io/hf_gpt2.h"
#include "model/params.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace nanogpt;
  using namespace nanogpt::fuzz;
  ModelConfig c;
  if (!accepts([&] { c = parse_hf_config(as_text(data, size), "config.json"); })) return 0;
  const ParamTable table(c);
  FUZZ_ASSERT(table.total_numel() > 0, "empty parameter table");
  const ModelConfig back = parse_hf_config(hf_config_json(c).dump(), "written config.json");
  FUZZ_ASSERT(back.n_layer == c.n_layer && back.n_head == c.n_head && back.n_embd == c.n_embd &&
                  back.block_size == c.block_size && back.vocab_size == c.vocab_size &&
                  back.bias == c.bias && back.gelu == c.gelu && back.dropout == c.dropout,
              "config.json round trip changed the config");
  return 0;
}
