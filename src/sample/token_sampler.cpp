// Temperature / top-k / top-p sampling over one row of logits.
#include "sample/token_sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace nanogpt {

int TokenSampler::sample(const float* logits, int V, Rng& rng) {
  if (params_.temperature <= 0) {
    return static_cast<int>(std::max_element(logits, logits + V) - logits);
  }
  candidates_.resize(V);
  std::iota(candidates_.begin(), candidates_.end(), 0);
  auto by_logit_desc = [&](int a, int b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  };
  int keep = V;
  if (params_.top_k > 0 && params_.top_k < V) {
    keep = params_.top_k;
    std::nth_element(candidates_.begin(), candidates_.begin() + keep - 1, candidates_.end(),
                     by_logit_desc);
    candidates_.resize(keep);
  }
  std::sort(candidates_.begin(), candidates_.end(), by_logit_desc);
  const double inv_t = 1.0 / params_.temperature;
  const double max_logit = logits[candidates_[0]];
  probs_.resize(keep);
  double sum = 0;
  for (int i = 0; i < keep; ++i) {
    probs_[i] = static_cast<float>(std::exp((logits[candidates_[i]] - max_logit) * inv_t));
    sum += probs_[i];
  }
  if (params_.top_p < 1.0) {  // smallest prefix whose mass reaches top_p (at least one token)
    double mass = 0;
    int cut = keep;
    for (int i = 0; i < keep; ++i) {
      mass += probs_[i] / sum;
      if (mass >= params_.top_p) {
        cut = i + 1;
        break;
      }
    }
    keep = cut;
    sum = 0;
    for (int i = 0; i < keep; ++i) sum += probs_[i];
  }
  double r = rng.uniform_double() * sum;
  double acc = 0;
  for (int i = 0; i < keep; ++i) {
    acc += probs_[i];
    if (r < acc) return candidates_[i];
  }
  return candidates_[keep - 1];
}

}  // namespace nanogpt
