// ModelWeights: named, non-owning views into a flat arena laid out by the ParamTable (used for the
// parameter arena, the gradient arena, which share the layout, the 16-bit weight copy of mixed
// precision, and the compact arena of float32-read tensors). Bias pointers are null when the
// model has no biases (config.bias false).
#pragma once

#include <cstdint>
#include <vector>

#include "model/params.h"

namespace nanogpt {

template <typename T>
struct BlockViews {
  T* ln1w = nullptr;      // (C)
  T* ln1b = nullptr;      // (C) or null
  T* qkvw = nullptr;      // (3C, C)
  T* qkvb = nullptr;      // (3C) or null
  T* attprojw = nullptr;  // (C, C)
  T* attprojb = nullptr;  // (C) or null
  T* ln2w = nullptr;      // (C)
  T* ln2b = nullptr;      // (C) or null
  T* fcw = nullptr;       // (4C, C)
  T* fcb = nullptr;       // (4C) or null
  T* fcprojw = nullptr;   // (C, 4C)
  T* fcprojb = nullptr;   // (C) or null
  T* attn_gain = nullptr;  // (1) the attention branch's gain, or null (attn_gain off)
};

template <typename T>
struct ModelViews {
  T* wte = nullptr;              // (Vp, C), also the tied LM head
  T* wpe = nullptr;              // (maxT, C) or null (rotary positions)
  T* skipw = nullptr;            // (n_layer / 2) U-net skips' weights, or null (unet_skips off)
  std::vector<BlockViews<T>> h;  // (L)
  T* lnfw = nullptr;             // (C)
  T* lnfb = nullptr;             // (C) or null
  T* head = nullptr;             // (Vp, C) the LM head: lm_head.weight, or wte when tied (null
                                 // for an untied head in the float32-read layout: lowp_only)
};

using BlockWeights = BlockViews<float>;
using ModelWeights = ModelViews<float>;
using LowpBlockWeights = BlockViews<uint16_t>;  // the 16-bit copy (bfloat16 or float16 bits)
using LowpModelWeights = ModelViews<uint16_t>;

// Which offsets a view uses: the arena's (ParamSpec::offset), or the compact arena of the tensors
// read in float32 (ParamSpec::fp32_read_offset; lowp_only tensors get null views).
enum class WeightLayout { kWhole, kFp32Read };

// Views of `arena` (table.total_numel() floats, or table.fp32_read_numel() for kFp32Read) by
// parameter name.
ModelWeights bind_weights(const ParamTable& table, int n_layer, float* arena,
                          WeightLayout layout = WeightLayout::kWhole);
// Views of a 16-bit copy laid out like the arena.
LowpModelWeights bind_lowp_weights(const ParamTable& table, int n_layer, uint16_t* arena);

}  // namespace nanogpt
