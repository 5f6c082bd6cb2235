// KernelContext::Impl: the oneDNN engine and stream and the cache of matmul primitives keyed by
// (N, C, OC, has_bias, kind, input and output dtypes), and the scratch of the low-precision kernels.
// Internal to kernels/cpu.
#pragma once

#include <cstdint>
#include <dnnl.hpp>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/context.h"
#include "kernels/dtype.h"

namespace nanogpt {

// kBackwardData accumulates (dinp += dout . W, the ops' convention); kBackwardDataSet overwrites
// (dinp = dout . W: the fused MLP backward's block of d(gelu), kernels/cpu/mlp_fused.cpp).
enum class MatmulKind { kForward, kBackwardData, kBackwardWeight, kBackwardDataSet };

struct MatmulKey {
  int64_t n;
  int64_t c;
  int64_t oc;
  bool bias;
  MatmulKind kind;
  DType in = DType::kF32;   // src and weights
  DType out = DType::kF32;  // dst
  bool operator<(const MatmulKey& o) const {
    return std::tie(n, c, oc, bias, kind, in, out) <
           std::tie(o.n, o.c, o.oc, o.bias, o.kind, o.in, o.out);
  }
};

// A ready matmul primitive and the descriptors its memory arguments use.
struct CachedMatmul {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul prim;
};

struct KernelContext::Impl {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::map<MatmulKey, CachedMatmul> matmuls;
  // Bound on cached primitives (sampling without a KV cache makes one shape per length).
  static constexpr size_t kMaxCached = 512;
  // Native bf16 matmul here: -1 not probed yet, 0 no (widen to float32), 1 yes (impl: its name).
  int native_bf16 = -1;
  std::string native_bf16_impl;
  // Float scratch of the low-precision kernels (widened blocks, float copies of weights; slots
  // 0-3) and of the fused MLP ops (blocks of gelu(pre) and its gradient; slots 4-5, any dtype in
  // float-sized storage): slot k grows on demand and is reused by later calls.
  std::vector<float> scratch[6];
  float* scratch_f32(int slot, size_t n) {
    if (scratch[slot].size() < n) scratch[slot].resize(n);
    return scratch[slot].data();
  }
};

// Runs the cached matmul primitive for `key` (created on first use) on raw pointers whose types
// are key.in (src, wei), key.out (dst) and float (bias). Defined in matmul.cpp.
namespace cpu {
void run_matmul(KernelContext::Impl& impl, const MatmulKey& key, const void* src, const void* wei,
                const void* bias, void* dst);
}  // namespace cpu

}  // namespace nanogpt
