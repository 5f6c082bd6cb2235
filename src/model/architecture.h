// Architecture: what a GPT block and its ends are made of, as data the model reads (one place that
// says which norm, positions and activation a block uses), derived from ModelConfig's keys. GPT-2
// (the default) is LayerNorm, learned positions, GELU, a tied head and plain logits; the modern
// options (modded-nanogpt's speedrun recipe) are RMSNorm, rotary embeddings, QK-norm, ReLU², an
// untied head, zero-initialized output projections, tanh soft-capped logits, U-net skips and a
// learned gain on each attention branch.
#pragma once

#include <string>
#include <vector>

#include "kernels/ops.h"
#include "model/model_config.h"

namespace nanogpt {

struct Architecture {
  NormKind norm = NormKind::kLayerNorm;  // ln_1, ln_2 and ln_f
  bool learned_positions = true;         // wpe added to the token embedding
  bool rotary = false;                   // q and k rotated by position (instead of wpe)
  double rope_theta = 10000.0;
  bool qk_norm = false;                  // RMSNorm of each head's q and k (no gain)
  float qk_norm_gain = 1.0f;             // with qk_norm: normalized q times this (logits x gain)
  MlpActivation activation = MlpActivation::kTanh;
  bool tied_head = true;                 // logits = lnf . wte^T; false: lm_head.weight
  bool zero_init_proj = false;           // attn.c_proj, mlp.c_proj, lm_head start at 0
  float logit_softcap = 0.0f;            // logits = cap * tanh(logits / cap); 0 = none
  // U-net skips (modded-nanogpt): with E = n_layer / 2, block L-E+i's input is block L-E+i-1's
  // output plus skip_weights[i] times block E-1-i's output (i < E); skip_weights start at 1.
  bool unet_skips = false;
  // The attention branch's learned gain (attn_gain): residual2 = x + gain_l * attention branch,
  // gain_l (h.<l>.attn.gain) starting at this value; 0 = off.
  float attn_gain = 0.0f;

  static Architecture of(const ModelConfig& config);
  // The options that GPT-2 does not have, one phrase each (empty for GPT-2, whatever its GELU
  // form): what an export to a GPT-2 format names when it refuses the model.
  std::vector<std::string> beyond_gpt2() const;
};

// U-net skips (Architecture::unet_skips) of an n_layer model: E = n_layer / 2 skips; skip i
// (i < E) takes block E-1-i's output to block n_layer-E+i's input. -1 where a block takes none.
inline int unet_skip_count(int n_layer) { return n_layer / 2; }
inline int unet_skip_into(int n_layer, int block) {  // the skip entering `block`'s input
  const int E = n_layer / 2, i = block - (n_layer - E);
  return i >= 0 && i < E ? i : -1;
}
inline int unet_skip_from(int n_layer, int skip) { return n_layer / 2 - 1 - skip; }

// Throws nanogpt::Error when `config` has options GPT-2 cannot express, for a writer of a GPT-2
// format (`format`: "llm.c's model file", "Hugging Face's GPT-2"), naming the options and why.
void require_gpt2_architecture(const ModelConfig& config, const std::string& format);

}  // namespace nanogpt

namespace nanogpt {

// The rotary embeddings' tables for positions 0..max_T-1 and head size HS (even): angle
// p * theta^(-2i/HS) of pair i < HS/2, its cosine and sine computed in double and rounded.
struct RotaryTables {
  std::vector<float> cos;  // (max_T, HS/2)
  std::vector<float> sin;  // (max_T, HS/2)
  RotaryTables() = default;
  RotaryTables(int max_T, int HS, double theta);
};

}  // namespace nanogpt
