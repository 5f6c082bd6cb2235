// ModelConfig: the shape of a GPT-2 model (layers, heads, width, context, vocab, bias, dropout,
// GELU kind). Each key is declared once in visit(); that drives parsing, --help and saving.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/ops.h"

namespace nanogpt {

struct ModelConfig {
  int n_layer = 12;
  int n_head = 12;
  int n_embd = 768;
  int block_size = 1024;
  int vocab_size = 0;  // 0 = from the dataset's meta.json, else GPT-2's 50257
  bool bias = false;
  double dropout = 0.0;
  std::string gelu = "tanh";

  template <typename Visitor>
  void visit(Visitor&& v) {
    v("n_layer", n_layer, "number of transformer blocks");
    v("n_head", n_head, "attention heads per block (n_embd must be divisible by it)");
    v("n_embd", n_embd, "embedding width C");
    v("block_size", block_size, "context length T (positions)");
    v("vocab_size", vocab_size, "vocabulary size; 0 = from the dataset's meta.json, else 50257");
    v("bias", bias, "biases in Linear layers and LayerNorms (GPT-2: True)");
    v("dropout", dropout, "dropout on embeddings, attention weights and residual paths");
    v("gelu", gelu, "GELU form: 'tanh' (GPT-2's approximation) or 'exact' (erf)");
  }

  // Vocab padded up to a multiple of 64 (50257 -> 50304); padded logits never win nor get loss.
  int padded_vocab_size() const { return (vocab_size + 63) / 64 * 64; }
  int head_size() const { return n_embd / n_head; }
  GeluKind gelu_kind() const { return gelu == "exact" ? GeluKind::kExact : GeluKind::kTanh; }
  // Throws nanogpt::Error naming the key and what to change.
  void validate() const;
};

}  // namespace nanogpt
