// Global-norm gradient clipping over every tensor of the parameter table (PyTorch's
// clip_grad_norm_ with norm_type 2: scale by max_norm / (norm + 1e-6) when that is < 1).
#pragma once

#include "model/params.h"

namespace nanogpt {

// L2 norm of all gradients together, accumulated in double. grads: the gradient arena
// (table.total_numel() floats, each tensor at its spec's offset).
double grad_global_norm(const ParamTable& table, const float* grads);

// Computes the global norm and, if max_norm > 0 and max_norm / (norm + 1e-6) < 1, scales every
// gradient by max_norm / (norm + 1e-6). Returns the norm BEFORE clipping. A non-finite norm
// (inf/nan gradients) is returned without scaling: the caller should skip the step.
double clip_grad_norm(const ParamTable& table, float* grads, double max_norm);

}  // namespace nanogpt
