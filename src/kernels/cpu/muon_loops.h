// The element loops of Muon and its Newton-Schulz iteration (kernels/cpu/muon_loops.cpp), compiled for
// every CPU target and dispatched at run time. Serial over one span: the callers split them. The
// file is built without floating-point contraction, so each result is rounded after every multiply
// and add, as the baseline (x86-64, no FMA) copy these loops had inside muon.cpp and
// newton_schulz.cpp computed them: the same floats as before on x86-64, now in wide vectors.
#pragma once

#include <cstdint>

namespace nanogpt::muon_loops {

// buf (n) = mu * buf + g; d (n) = g + mu * buf (Nesterov) or buf.
void momentum(float* buf, float* d, const float* g, int64_t n, float mu, bool nesterov);
// p (n) = p * keep - step * o.
void update(float* p, const float* o, int64_t n, float keep, float step);
// x (n) = m * s.
void scale_into(float* x, const float* m, int64_t n, float s);
// x (n) = a * x + y.
void scale_add(float* x, const float* y, int64_t n, float a);
// out (n) = a * u + b * v.
void combine(float* out, const float* u, const float* v, int64_t n, float a, float b);

}  // namespace nanogpt::muon_loops
