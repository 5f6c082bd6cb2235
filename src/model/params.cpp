// Builds the parameter table from a ModelConfig, in the order of Hugging Face's GPT-2 state dict.
#include "model/params.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "model/architecture.h"

namespace nanogpt {

ParamTable::ParamTable(const ModelConfig& cfg) {
  const int64_t C = cfg.n_embd, Vp = cfg.padded_vocab_size(), maxT = cfg.block_size;
  const float std_base = 0.02f;
  const Architecture arch = Architecture::of(cfg);
  // Output projections: nanoGPT's scaled init, or zeros (zero_init_proj).
  const float std_proj =
      arch.zero_init_proj ? 0.0f : 0.02f / std::sqrt(2.0f * static_cast<float>(cfg.n_layer));
  auto add = [&](std::string name, std::vector<int64_t> shape, float std, bool one = false,
                 bool transposed = false, bool lowp_only = false, bool hidden_matrix = false) {
    ParamSpec s;
    s.name = std::move(name);
    s.shape = std::move(shape);
    s.decay = s.shape.size() >= 2;
    s.init_std = std;
    s.init_one = one;
    s.transposed_in_hf = transposed;
    s.numel = 1;
    for (int64_t d : s.shape) s.numel *= d;
    s.lowp_only = lowp_only;
    s.hidden_matrix = hidden_matrix;
    s.offset = total_;
    const int64_t slot = (s.numel + 15) / 16 * 16;  // keep each tensor 64-byte aligned
    total_ += slot;
    if (!lowp_only) {
      s.fp32_read_offset = fp32_read_total_;
      fp32_read_total_ += slot;
    }
    specs_.push_back(std::move(s));
  };
  add("wte.weight", {Vp, C}, std_base);
  if (arch.learned_positions) add("wpe.weight", {maxT, C}, std_base);
  // U-net skips' weights (n_layer / 2 scalars, from 1), before the blocks: their gradients are
  // complete only once every decoder block's backward ran, like wte's (the last range the
  // backward reports, GPT::set_grad_ready_hook).
  if (arch.unet_skips) add("skip_weights", {unet_skip_count(cfg.n_layer)}, 0.0f, true);
  for (int l = 0; l < cfg.n_layer; ++l) {
    const std::string p = "h." + std::to_string(l) + ".";
    add(p + "ln_1.weight", {C}, 0.0f, true);
    if (cfg.bias) add(p + "ln_1.bias", {C}, 0.0f);
    add(p + "attn.c_attn.weight", {3 * C, C}, std_base, false, true, /*lowp_only=*/true,
        /*hidden_matrix=*/true);
    if (cfg.bias) add(p + "attn.c_attn.bias", {3 * C}, 0.0f);
    add(p + "attn.c_proj.weight", {C, C}, std_proj, false, true, /*lowp_only=*/true,
        /*hidden_matrix=*/true);
    if (cfg.bias) add(p + "attn.c_proj.bias", {C}, 0.0f);
    if (arch.attn_gain > 0.0f) {  // the attention branch's learned gain, from attn_gain
      add(p + "attn.gain", {1}, 0.0f, true);
      specs_.back().init_constant = arch.attn_gain;
    }
    add(p + "ln_2.weight", {C}, 0.0f, true);
    if (cfg.bias) add(p + "ln_2.bias", {C}, 0.0f);
    add(p + "mlp.c_fc.weight", {4 * C, C}, std_base, false, true, /*lowp_only=*/true,
        /*hidden_matrix=*/true);
    if (cfg.bias) add(p + "mlp.c_fc.bias", {4 * C}, 0.0f);
    add(p + "mlp.c_proj.weight", {C, 4 * C}, std_proj, false, true, /*lowp_only=*/true,
        /*hidden_matrix=*/true);
    if (cfg.bias) add(p + "mlp.c_proj.bias", {C}, 0.0f);
  }
  add("ln_f.weight", {C}, 0.0f, true);
  if (cfg.bias) add("ln_f.bias", {C}, 0.0f);
  // An untied LM head, read only by the classifier's matmul (through the 16-bit copy in mixed
  // precision), like the blocks' matmul weights.
  if (!arch.tied_head) {
    add("lm_head.weight", {Vp, C}, arch.zero_init_proj ? 0.0f : std_base, false, false,
        /*lowp_only=*/true);
  }
}

ParamTable ParamTable::slice(int64_t begin, int64_t end) const {
  CHECK(0 <= begin && begin <= end && end <= total_,
        "ParamTable::slice [{}, {}) is not inside the arena of {} elements", begin, end, total_);
  ParamTable t;
  for (const auto& s : specs_) {
    const int64_t lo = std::max(begin, s.offset), hi = std::min(end, s.offset + s.numel);
    if (lo >= hi) continue;
    ParamSpec cut = s;
    cut.offset = lo - begin;
    cut.numel = hi - lo;
    cut.shape = {cut.numel};
    cut.fp32_read_offset = -1;  // (a slice has no compact float32-read arena)
    t.specs_.push_back(std::move(cut));
  }
  t.total_ = end - begin;
  return t;
}

int64_t ParamTable::fp32_read_count(int64_t begin, int64_t end) const {
  int64_t n = 0;
  for (const auto& s : specs_) {
    if (s.lowp_only) continue;
    const int64_t slot_end = s.offset + (s.numel + 15) / 16 * 16;
    n += std::max<int64_t>(0, std::min(end, slot_end) - std::max(begin, s.offset));
  }
  return n;
}

int64_t ParamTable::num_params_for_mfu() const {
  int64_t n = 0;
  const bool untied = find("lm_head.weight") != nullptr;
  for (const auto& s : specs_) {
    // Embedding lookups are no FLOPs; the head's matmul is (wte's when tied).
    if (s.name != "wpe.weight" && !(untied && s.name == "wte.weight")) n += s.numel;
  }
  return n;
}

const ParamSpec* ParamTable::find(const std::string& name) const {
  for (const auto& s : specs_) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

const ParamSpec& ParamTable::at(const std::string& name) const {
  const ParamSpec* s = find(name);
  CHECK(s != nullptr, "no parameter named '{}' in this model", name);
  return *s;
}

}  // namespace nanogpt
