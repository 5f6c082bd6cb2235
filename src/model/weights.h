// ModelWeights: named, non-owning views into a flat arena laid out by the ParamTable (used for both
// the parameter arena and the gradient arena, which share the layout). Bias pointers are null when
// the model has no biases (config.bias false).
#pragma once

#include <vector>

#include "model/params.h"

namespace nanogpt {

struct BlockWeights {
  float* ln1w = nullptr;      // (C)
  float* ln1b = nullptr;      // (C) or null
  float* qkvw = nullptr;      // (3C, C)
  float* qkvb = nullptr;      // (3C) or null
  float* attprojw = nullptr;  // (C, C)
  float* attprojb = nullptr;  // (C) or null
  float* ln2w = nullptr;      // (C)
  float* ln2b = nullptr;      // (C) or null
  float* fcw = nullptr;       // (4C, C)
  float* fcb = nullptr;       // (4C) or null
  float* fcprojw = nullptr;   // (C, 4C)
  float* fcprojb = nullptr;   // (C) or null
};

struct ModelWeights {
  float* wte = nullptr;         // (Vp, C), also the tied LM head
  float* wpe = nullptr;         // (maxT, C)
  std::vector<BlockWeights> h;  // (L)
  float* lnfw = nullptr;        // (C)
  float* lnfb = nullptr;        // (C) or null
};

// Views of `arena` (table.total_numel() floats) by parameter name.
ModelWeights bind_weights(const ParamTable& table, int n_layer, float* arena);

}  // namespace nanogpt
