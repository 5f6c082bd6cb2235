// Picking the next token from logits: temperature, top-k and top-p (nucleus) filtering, then a
// draw from the seeded Rng. temperature 0 means greedy (argmax).
#pragma once

#include <vector>

#include "core/rng.h"

namespace nanogpt {

struct SamplingParams {
  double temperature = 0.8;
  int top_k = 200;     // 0 = off
  double top_p = 1.0;  // 1 = off
};

class TokenSampler {
 public:
  explicit TokenSampler(SamplingParams params) : params_(params) {}
  // logits: the first V entries are candidates (padded vocab entries must be excluded by V).
  int sample(const float* logits, int V, Rng& rng);

 private:
  SamplingParams params_;
  std::vector<float> probs_;     // (V)
  std::vector<int> candidates_;  // indices kept after top-k / top-p
};

}  // namespace nanogpt
