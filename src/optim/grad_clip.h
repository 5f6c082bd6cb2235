// Global-norm gradient clipping over every tensor of the parameter table (PyTorch's
// clip_grad_norm_ with norm_type 2: scale by max_norm / (norm + 1e-6) when that is < 1).
#pragma once

#include "model/params.h"

namespace nanogpt {

class Backend;  // kernels/backend.h: computes the passes, on the memory holding grads

// L2 norm of all gradients together, accumulated in double. grads: the gradient arena
// (table.total_numel() floats, each tensor at its spec's offset). With unscale != 1 it is the norm
// of the float products g * unscale, computed on the fly without writing them: bit-identical to
// GradScaler::unscale followed by this function with unscale 1 (the fused optimizer step's
// read-only pass; inf/nan anywhere makes it non-finite).
double grad_global_norm(Backend& backend, const ParamTable& table, const float* grads,
                        float unscale = 1.0f);

// The factor clip_grad_norm scales the gradients by for this (pre-clipping) norm: max_norm /
// (norm + 1e-6) rounded to float when that is < 1; else 1 (also for max_norm <= 0 or a non-finite
// norm). Multiplying by 1 changes no float, so a fused step may always apply it.
float clip_coefficient(double norm, double max_norm);

// Computes the global norm and, if max_norm > 0 and max_norm / (norm + 1e-6) < 1, scales every
// gradient by max_norm / (norm + 1e-6). Returns the norm BEFORE clipping. A non-finite norm
// (inf/nan gradients) is returned without scaling: the caller should skip the step.
double clip_grad_norm(Backend& backend, const ParamTable& table, float* grads, double max_norm);

}  // namespace nanogpt
