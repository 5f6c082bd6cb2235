// KernelContext::Impl: the oneDNN engine and stream and the cache of matmul primitives keyed by
// (N, C, OC, has_bias, kind). Internal to kernels/cpu; only the matmul kernels use it.
#pragma once

#include <cstdint>
#include <dnnl.hpp>
#include <map>
#include <tuple>

#include "kernels/context.h"

namespace nanogpt {

enum class MatmulKind { kForward, kBackwardData, kBackwardWeight };

struct MatmulKey {
  int64_t n;
  int64_t c;
  int64_t oc;
  bool bias;
  MatmulKind kind;
  bool operator<(const MatmulKey& o) const {
    return std::tie(n, c, oc, bias, kind) < std::tie(o.n, o.c, o.oc, o.bias, o.kind);
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
};

}  // namespace nanogpt
