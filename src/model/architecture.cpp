// Architecture from ModelConfig's keys (validated there), and the list of what is not GPT-2.
#include "model/architecture.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

#include "core/check.h"

namespace nanogpt {

Architecture Architecture::of(const ModelConfig& c) {
  Architecture a;
  a.norm = c.norm == "rmsnorm" ? NormKind::kRmsNorm : NormKind::kLayerNorm;
  a.rotary = c.position == "rotary";
  a.learned_positions = !a.rotary;
  a.rope_theta = c.rope_theta;
  a.qk_norm = c.qk_norm;
  a.qk_norm_gain = static_cast<float>(c.qk_norm_gain);
  a.activation = c.mlp_activation();
  a.tied_head = c.tie_embeddings;
  a.zero_init_proj = c.zero_init_proj;
  a.logit_softcap = static_cast<float>(c.logit_softcap);
  a.unet_skips = c.unet_skips;
  a.attn_gain = static_cast<float>(c.attn_gain);
  return a;
}

std::vector<std::string> Architecture::beyond_gpt2() const {
  std::vector<std::string> out;
  if (norm == NormKind::kRmsNorm) out.push_back("norm = 'rmsnorm'");
  if (rotary) out.push_back("position = 'rotary'");
  if (qk_norm) out.push_back("qk_norm = True");
  if (activation == MlpActivation::kRelu2) out.push_back("activation = 'relu2'");
  if (!tied_head) out.push_back("tie_embeddings = False");
  if (logit_softcap > 0.0f) out.push_back("logit_softcap > 0");
  if (unet_skips) out.push_back("unet_skips = True");
  if (attn_gain > 0.0f) out.push_back("attn_gain > 0");
  return out;  // (zero_init_proj is only an initialization: the trained model is still GPT-2)
}

void require_gpt2_architecture(const ModelConfig& config, const std::string& format) {
  const std::vector<std::string> extra = Architecture::of(config).beyond_gpt2();
  CHECK(extra.empty(),
        "cannot write this model as {}: it has {}, which that format cannot express (its GPT-2 "
        "has LayerNorm, learned positions, GELU, a head tied to wte and plain logits). Keep the "
        "checkpoint for `nanogpt sample` and resuming, or train with those keys at their defaults "
        "to export",
        format, fmt::join(extra, ", "));
}

}  // namespace nanogpt

namespace nanogpt {

RotaryTables::RotaryTables(int max_T, int HS, double theta) {
  const int half = HS / 2;
  cos.resize(static_cast<size_t>(max_T) * half);
  sin.resize(static_cast<size_t>(max_T) * half);
  for (int p = 0; p < max_T; ++p) {
    for (int i = 0; i < half; ++i) {
      const double angle = p * std::pow(theta, -2.0 * i / HS);
      cos[static_cast<size_t>(p) * half + i] = static_cast<float>(std::cos(angle));
      sin[static_cast<size_t>(p) * half + i] = static_cast<float>(std::sin(angle));
    }
  }
}

}  // namespace nanogpt
