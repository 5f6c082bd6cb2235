// The parameter table: THE one list of the model's parameters {name, shape, weight decay?, init}
// (GPT-2's, less wpe with rotary positions, plus lm_head.weight with an untied head,
// skip_weights with U-net skips and each block's attn.gain with attn_gain).
// It drives allocation (one flat arena, each tensor a slice at `offset`), init, optimizer, weight
// decay (only tensors with >= 2 dims), checkpoint names (Hugging Face GPT-2 names) and all-reduce.
// Linear weights are stored (out, in) like nn.Linear; HF's Conv1D files store (in, out): io/
// handles that transposition (`transposed_in_hf`).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/model_config.h"

namespace nanogpt {

struct ParamSpec {
  std::string name;               // HF GPT-2 name, e.g. "h.3.attn.c_attn.weight"
  std::vector<int64_t> shape;     // our layout, e.g. {3C, C}
  bool decay = false;             // weight decay applies (ndim >= 2)
  float init_std = 0.0f;          // N(0, init_std); 0 with init_one=false -> zeros
  bool init_one = false;          // starts at init_constant (LayerNorm weights: at 1)
  float init_constant = 1.0f;     // with init_one: the starting value of every element
  bool transposed_in_hf = false;  // HF Conv1D stores this matrix as (in, out)
  // Mixed precision reads this tensor only through its 16-bit copy (the four matmul weights of a
  // block). The others -- wte and wpe (the encoder gathers rows in float32; wte is also the tied
  // head, which reads the 16-bit copy), LayerNorm gains and biases, matmul biases -- are read in
  // float32 by their kernels, so they need float32 values whole wherever the model runs.
  bool lowp_only = false;
  int64_t offset = 0;             // element offset in the flat arena
  int64_t numel = 0;
  // Offset in the compact arena of float32-read tensors (the tensors with lowp_only false, each
  // with its padded slot, in table order); -1 for lowp_only tensors.
  int64_t fp32_read_offset = -1;
  // Muon's group (optimizer='muon'): the hidden 2-D weights, the four matmul weights of each
  // block. Embeddings, the head, gains and biases stay with AdamW.
  bool hidden_matrix = false;
};

class ParamTable {
 public:
  explicit ParamTable(const ModelConfig& config);

  const std::vector<ParamSpec>& specs() const { return specs_; }
  int64_t total_numel() const { return total_; }
  // nanoGPT's get_num_params(non_embedding=True): all parameters minus the position embedding
  // (and minus wte with an untied head: then lm_head is the matmul).
  int64_t num_params_for_mfu() const;
  // Floats of the compact arena of the tensors read in float32 (ParamSpec::fp32_read_offset).
  int64_t fp32_read_numel() const { return fp32_read_total_; }
  // Floats of that compact arena that lie in arena elements [begin, end). The compaction keeps
  // the arena's order, so a contiguous arena range maps to a contiguous compact range, starting at
  // fp32_read_count(0, begin).
  int64_t fp32_read_count(int64_t begin, int64_t end) const;
  // Null when absent.
  const ParamSpec* find(const std::string& name) const;
  // Throws nanogpt::Error naming the parameter when absent.
  const ParamSpec& at(const std::string& name) const;

  // The part of this table inside arena elements [begin, end): each tensor cut to its overlap
  // (shape flattened to {numel}), offsets counted from `begin`; total_numel() = end - begin. An
  // optimizer over a slice updates one shard of the arena (ZeRO-1).
  ParamTable slice(int64_t begin, int64_t end) const;

 private:
  ParamTable() = default;

  std::vector<ParamSpec> specs_;
  int64_t total_ = 0;
  int64_t fp32_read_total_ = 0;
};

}  // namespace nanogpt
