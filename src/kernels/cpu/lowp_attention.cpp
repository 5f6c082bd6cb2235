// Low-precision causal attention (ops_lowp.h), for each group of batch elements
// (attention_batch_group, each group with its own dropout seed):
//  - all-bf16 tensors with the context's way onednn (kernels/kernel_ways.h): the block products
//    as oneDNN matmuls (attention_onednn.h) on the 16-bit tensors where they lie;
//  - all-bf16 tensors on a CPU with AVX512_BF16 (attention_bf16_native), unless the context's
//    ways say widened: the native bf16 kernel reads and writes the 16-bit tensors where they lie;
//  - otherwise (float16, mixed dtypes, other shapes) the 16-bit qkv (and in backward out, dout)
//    are widened into the context's scratch and the float32 flash attention runs on the group;
//    outputs are narrowed (forward) or added (backward) back. Scratch is a group's worth.
// All three keep their per-thread scratch in the context's AttentionWorkspace.
#include <algorithm>
#include <cstring>

#include "core/rng.h"
#include "kernels/cpu/attention_bf16.h"
#include "kernels/cpu/attention_onednn.h"
#include "kernels/cpu/attention_workspace.h"
#include "kernels/cpu/context_impl.h"
#include "kernels/cpu/convert.h"
#include "kernels/ops_lowp.h"

namespace nanogpt {

int attention_batch_group(int B, int NH) { return std::min(B, std::max(1, (64 + NH - 1) / NH)); }

namespace cpu {

void attention_forward(CpuBackend& ctx, TypedPtr out, float* lse, ConstTypedPtr qkv, int B,
                       int T, int C, int NH, float dropout_p, uint64_t seed) {
  auto& impl = ctx.impl();
  if (out.f32() && qkv.f32()) {
    return attention_forward(impl.attention, out.f32(), lse, qkv.f32(), B, T, C, NH, dropout_p,
                             seed);
  }
  const AttentionBf16Way way = ctx.ways().attention_bf16;
  const bool all_bf16 = out.dtype == DType::kBF16 && qkv.dtype == DType::kBF16;
  const int G = attention_batch_group(B, NH);
  for (int b0 = 0; b0 < B; b0 += G) {
    const int g = std::min(G, B - b0);
    const int64_t rows = static_cast<int64_t>(g) * T, r0 = static_cast<int64_t>(b0) * T;
    // The group's tensors, lse rows and dropout seed.
    auto* o16 = static_cast<uint16_t*>(out.at(r0 * C).data);
    auto* q16 = static_cast<const uint16_t*>(qkv.at(r0 * 3 * C).data);
    float* lse_g = lse + static_cast<int64_t>(b0) * NH * T;
    const uint64_t seed_g = splitmix64(seed + static_cast<uint64_t>(b0));
    if (all_bf16 && way == AttentionBf16Way::kOnednn) {
      attention_forward_onednn(ctx, o16, lse_g, q16, g, T, C, NH, dropout_p, seed_g);
      continue;
    }
    if (all_bf16 && way == AttentionBf16Way::kNative && attention_bf16_native(g, T, C, NH)) {
      attention_forward_bf16(impl.attention, o16, lse_g, q16, g, T, C, NH, dropout_p, seed_g);
      continue;
    }
    float* q = impl.scratch_f32(1, static_cast<size_t>(rows * 3 * C));  // (g, T, 3C)
    float* o = impl.scratch_f32(2, static_cast<size_t>(rows * C));      // (g, T, C)
    convert(q, qkv.at(r0 * 3 * C), rows * 3 * C);
    attention_forward(impl.attention, o, lse_g, q, g, T, C, NH, dropout_p, seed_g);
    convert(out.at(r0 * C), o, rows * C);
  }
}

void attention_backward(CpuBackend& ctx, TypedPtr dqkv, ConstTypedPtr dout, ConstTypedPtr out,
                        const float* lse, ConstTypedPtr qkv, int B, int T, int C, int NH,
                        float dropout_p, uint64_t seed) {
  auto& impl = ctx.impl();
  if (dqkv.f32() && dout.f32() && out.f32() && qkv.f32()) {
    return attention_backward(impl.attention, dqkv.f32(), dout.f32(), out.f32(), lse, qkv.f32(), B,
                              T, C, NH, dropout_p, seed);
  }
  const AttentionBf16Way way = ctx.ways().attention_bf16;
  const bool all_bf16 = dqkv.dtype == DType::kBF16 && dout.dtype == DType::kBF16 &&
                        out.dtype == DType::kBF16 && qkv.dtype == DType::kBF16;
  const int G = attention_batch_group(B, NH);
  for (int b0 = 0; b0 < B; b0 += G) {
    const int g = std::min(G, B - b0);
    const int64_t rows = static_cast<int64_t>(g) * T, r0 = static_cast<int64_t>(b0) * T;
    // The group's tensors, lse rows and dropout seed.
    auto* dq16 = static_cast<uint16_t*>(dqkv.at(r0 * 3 * C).data);
    auto* do16 = static_cast<const uint16_t*>(dout.at(r0 * C).data);
    auto* o16 = static_cast<const uint16_t*>(out.at(r0 * C).data);
    auto* q16 = static_cast<const uint16_t*>(qkv.at(r0 * 3 * C).data);
    const float* lse_g = lse + static_cast<int64_t>(b0) * NH * T;
    const uint64_t seed_g = splitmix64(seed + static_cast<uint64_t>(b0));
    if (all_bf16 && way == AttentionBf16Way::kOnednn) {
      attention_backward_onednn(ctx, dq16, do16, o16, lse_g, q16, g, T, C, NH, dropout_p, seed_g);
      continue;
    }
    if (all_bf16 && way == AttentionBf16Way::kNative && attention_bf16_native(g, T, C, NH)) {
      attention_backward_bf16(impl.attention, dq16, do16, o16, lse_g, q16, g, T, C, NH, dropout_p,
                              seed_g);
      continue;
    }
    float* q = impl.scratch_f32(0, static_cast<size_t>(rows * 3 * C));   // (g, T, 3C) qkv
    float* dq = impl.scratch_f32(1, static_cast<size_t>(rows * 3 * C));  // (g, T, 3C) dqkv
    float* o = impl.scratch_f32(2, static_cast<size_t>(rows * C));       // (g, T, C) out
    float* d = impl.scratch_f32(3, static_cast<size_t>(rows * C));       // (g, T, C) dout
    convert(q, qkv.at(r0 * 3 * C), rows * 3 * C);
    convert(o, out.at(r0 * C), rows * C);
    convert(d, dout.at(r0 * C), rows * C);
    std::memset(dq, 0, sizeof(float) * static_cast<size_t>(rows * 3 * C));
    attention_backward(impl.attention, dq, d, o, lse_g, q, g, T, C, NH, dropout_p, seed_g);
    convert_add(dqkv.at(r0 * 3 * C), dq, rows * 3 * C);
  }
}

}  // namespace cpu
}  // namespace nanogpt
