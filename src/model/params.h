// The parameter table: THE one list of GPT-2's parameters {name, shape, weight decay?, init}.
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
  bool init_one = false;          // LayerNorm weights start at 1
  bool transposed_in_hf = false;  // HF Conv1D stores this matrix as (in, out)
  int64_t offset = 0;             // element offset in the flat arena
  int64_t numel = 0;
};

class ParamTable {
 public:
  explicit ParamTable(const ModelConfig& config);

  const std::vector<ParamSpec>& specs() const { return specs_; }
  int64_t total_numel() const { return total_; }
  // nanoGPT's get_num_params(non_embedding=True): all parameters minus the position embedding.
  int64_t num_params_for_mfu() const;
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
};

}  // namespace nanogpt
