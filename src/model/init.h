// nanoGPT's weight init driven by the parameter table: N(0, spec.init_std) (0.02, residual c_proj
// 0.02/sqrt(2L)), LayerNorm weights 1, biases 0. Padded wte rows are drawn like the rest (they
// never win: loss and softmax ignore columns >= V).
#pragma once

#include <cstdint>

#include "model/params.h"

namespace nanogpt {

// Fills params (table.total_numel() floats) deterministically from `seed` (core/rng.h Rng), tensor
// by tensor in table order; alignment padding between tensors is set to 0.
void init_weights(const ParamTable& table, float* params, uint64_t seed);
// The same values for arena elements [begin, end) only, into out (end - begin floats): what
// init_weights puts there (the random stream is drawn through, values outside are not computed).
// ZeRO-1 in mixed precision initializes each rank's shard of the master weights with it.
void init_weights_range(const ParamTable& table, uint64_t seed, int64_t begin, int64_t end,
                        float* out);

}  // namespace nanogpt
