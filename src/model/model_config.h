// ModelConfig: the shape of a GPT model (layers, heads, width, context, vocab, bias, dropout, GELU
// kind) and its architecture options beyond GPT-2 (norm, positions, QK-norm and its query gain,
// MLP activation, tied head, zero-initialized projections, logit soft-cap, U-net skips, the
// attention branch's learned gain;
// model/architecture.h reads them). Each key is declared once in visit(); that drives parsing,
// --help and saving. The defaults are GPT-2.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/ops.h"

namespace nanogpt {

struct ModelConfig {
  // Upper bounds that validate() enforces, so that a file header or config claiming an absurd
  // shape fails with a message before anything is sized from it (GPT-2 XL: 48 layers, 1600 wide,
  // context 1024, 1.6e9 parameters).
  static constexpr int kMaxLayers = 1024;
  static constexpr int kMaxEmbd = 65536;
  static constexpr int kMaxBlockSize = 1 << 20;
  static constexpr int kMaxVocab = 65536;  // token files hold uint16 ids
  static constexpr int64_t kMaxParams = int64_t{1} << 36;

  int n_layer = 12;
  int n_head = 12;
  int n_embd = 768;
  int block_size = 1024;
  int vocab_size = 0;  // 0 = from the dataset's meta.json, else GPT-2's 50257
  bool bias = false;
  double dropout = 0.0;
  double attn_dropout = -1.0;  // < 0: dropout's
  std::string gelu = "tanh";
  std::string norm = "layernorm";
  std::string position = "learned";
  double rope_theta = 10000.0;
  bool qk_norm = false;
  double qk_norm_gain = 1.0;
  std::string activation = "gelu";
  bool tie_embeddings = true;
  bool zero_init_proj = false;
  double logit_softcap = 0.0;
  bool unet_skips = false;
  double attn_gain = 0.0;

  template <typename Visitor>
  void visit(Visitor&& v) {
    v("n_layer", n_layer, "number of transformer blocks");
    v("n_head", n_head, "attention heads per block (n_embd must be divisible by it)");
    v("n_embd", n_embd, "embedding width C");
    v("block_size", block_size, "context length T (positions)");
    v("vocab_size", vocab_size, "vocabulary size; 0 = from the dataset's meta.json, else 50257");
    v("bias", bias, "biases in Linear layers and LayerNorms (GPT-2: True)");
    v("dropout", dropout, "dropout on embeddings, attention weights and residual paths");
    v("attn_dropout", attn_dropout,
      "dropout on the attention weights alone; -1 = dropout's (nanoGPT: one for all). 0 keeps "
      "dropout on embeddings and residual paths and skips the per-score masks (the costly part)");
    v("gelu", gelu, "GELU form: 'tanh' (GPT-2's approximation) or 'exact' (erf)");
    v("norm", norm, "'layernorm' (GPT-2) or 'rmsnorm' (no centering, scale by the root mean square)");
    v("position", position,
      "'learned' (GPT-2's position embedding wpe) or 'rotary' (rotary embeddings of q and k, no wpe)");
    v("rope_theta", rope_theta, "position = 'rotary': the base of the rotation frequencies");
    v("qk_norm", qk_norm, "RMSNorm (without gain) of each head's query and key before attention");
    v("qk_norm_gain", qk_norm_gain,
      "with qk_norm: the normalized queries times this fixed gain, so the attention logits are "
      "gain * q.k / sqrt(head_size) of unit-RMS q and k (a sharper softmax than QK-norm alone "
      "allows; modded-nanogpt's larger attention scale); 1 = off");
    v("activation", activation, "MLP activation: 'gelu' (GPT-2, form per gelu) or 'relu2' (relu(x)^2)");
    v("tie_embeddings", tie_embeddings,
      "the LM head is the token embedding wte (GPT-2); False: a separate lm_head.weight");
    v("zero_init_proj", zero_init_proj,
      "start the output projections (attn.c_proj, mlp.c_proj, an untied lm_head) at zero");
    v("logit_softcap", logit_softcap,
      "cap the logits smoothly at +-this value, cap * tanh(logits / cap); 0 = off (GPT-2)");
    v("unet_skips", unet_skips,
      "U-net skips: the outputs of the first n_layer/2 blocks are added, each times a learned "
      "weight (skip_weights, from 1), to the inputs of the last n_layer/2 in mirror order");
    v("attn_gain", attn_gain,
      "a learned scalar per block (h.<l>.attn.gain, starting at this value) multiplies the "
      "attention branch (attn.c_proj's output) before its residual add: x + gain * attn(ln_1(x)), "
      "as a learned scale of the values v (modded-nanogpt's value lambdas); 0 = off (GPT-2)");
  }

  // Vocab padded up to a multiple of 64 (50257 -> 50304); padded logits never win nor get loss.
  int padded_vocab_size() const { return (vocab_size + 63) / 64 * 64; }
  int head_size() const { return n_embd / n_head; }
  // Dropout (dropout, attn_dropout) as `configured` has it: a training choice, not the model's
  // shape, so it may change on resume and when training starts from saved weights (as nanoGPT).
  void take_dropout_from(const ModelConfig& configured) {
    dropout = configured.dropout;
    attn_dropout = configured.attn_dropout;
  }
  // The dropout probability of the attention weights (attn_dropout, or dropout when it is < 0).
  double attention_dropout() const { return attn_dropout < 0.0 ? dropout : attn_dropout; }
  // The MLP's activation (activation and gelu together).
  MlpActivation mlp_activation() const {
    if (activation == "relu2") return MlpActivation::kRelu2;
    return gelu == "exact" ? MlpActivation::kExact : MlpActivation::kTanh;
  }
  // Parameters of the model (with biases, wte padded); needs n_layer, n_embd, block_size and
  // vocab_size within the bounds above.
  int64_t num_params_bound() const;
  // Throws nanogpt::Error naming the key, its value, the allowed range and what to change.
  void validate() const;
};

}  // namespace nanogpt
