// AdamW's element update over one span (kernels/cpu/adamw_update.cpp), written once in Highway
// vectors (masked tails) and compiled for every CPU target, dispatched at run time. Serial: the
// CPU backend's adamw_step splits the tensors between its threads (cpu_backend_optimizer_ops.cpp).
#pragma once

#include <cstdint>

#include "kernels/optimizer_ops.h"

namespace nanogpt::cpu {

// p, g, m, v: (n) slices of one tensor. m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
// p = p keep - step m / (sqrt(v) / bc2 + eps), each product-sum one fused multiply-add where the
// target has them. g is only read.
void adamw_update(float* p, const float* g, float* m, float* v, int64_t n, const AdamWConstants& k,
                  float keep, float step);
// The same with g used as (g * x.unscale) * x.clip, and g = 0 afterwards when x.zero.
void adamw_update_fused(float* p, float* g, float* m, float* v, int64_t n,
                        const AdamWConstants& k, float keep, float step, const GradTransform& x);

}  // namespace nanogpt::cpu
