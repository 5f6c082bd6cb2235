// CpuBackend::Impl: the oneDNN engine and stream and the cache of matmul primitives keyed by
// (N, C, OC, has_bias, kind, input and output dtypes), the scratch of the low-precision kernels,
// the attention kernels' workspace and the oneDNN attention's block products.
// Internal to kernels/cpu.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <dnnl.hpp>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/check.h"
#include "core/cpu_target.h"
#include "kernels/cpu/attention_workspace.h"
#include "kernels/cpu_backend.h"
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

// Rows from which a 16-bit forward or backward-data matmul takes its weights in oneDNN's blocked
// layout, reordered on every call: brgemm then reads whole blocks of the packed weights instead of
// copying strided blocks itself (bf16 here: ~840 vs ~700 GFLOP/s forward, ~780 vs ~700 backward
// at GPT-2 and baby-GPT shapes, bench/kernels.cpp BM_MatmulLowp), for a reorder that reads and
// writes the weights once (0.03-0.7 ms at those shapes). Below this many rows the reorder would
// cost about what it saves (the 124M classifier's chunks of 320 rows reading all of wte).
inline constexpr int64_t kPackWeightsMinRows = 1024;

// A ready matmul primitive and the descriptors its memory arguments use. Where the primitive takes
// its weights in oneDNN's blocked layout (packed_weights), `pack` reorders the caller's plain
// (strided) weights, described by `plain_weights`, into that layout before each run.
struct CachedMatmul {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul prim;
  dnnl::memory::desc plain_weights;
  std::optional<dnnl::reorder> pack;
};

// The oneDNN attention's block products (attention_onednn.cpp), batched over a sequence's heads:
// which product, the query block's rows, the keys it sees, the head size, the heads, the model
// width (the row strides of qkv and dout) and T (the stride of the per-head gradient accumulators).
struct AttentionMatmulKey {
  int product, nq, kend, hs, nh, c, t;
  bool operator<(const AttentionMatmulKey& o) const {
    return std::tie(product, nq, kend, hs, nh, c, t) <
           std::tie(o.product, o.nq, o.kend, o.hs, o.nh, o.c, o.t);
  }
};
struct AttentionMatmul {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul prim;
  size_t scratchpad_bytes = 0;  // its user-managed scratchpad (each thread brings its own)
};

struct CpuBackend::Impl {
  // The CPU target the dispatched kernels run at (NANOGPT_CPU_TARGET caps it), applied to Highway
  // when the context is made.
  CpuTarget cpu_target = CpuTarget::from_environment();
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
  // The MLP activation of every bf16 value (index: its bits), per MlpActivation (0 GELU tanh, 1 GELU
  // exact, 2 ReLU²), built on first use
  // by lowp_elementwise.cpp: the rounded output and the float derivative.
  std::vector<uint16_t> gelu_bf16[3];
  std::vector<float> gelu_grad_bf16[3];
  // The weights of the running matmul in its blocked layout (CachedMatmul::pack), 64-byte aligned;
  // grows on demand, reused by every packed matmul.
  struct FreeAligned {
    void operator()(void* p) const { std::free(p); }
  };
  std::unique_ptr<void, FreeAligned> packed_weights;
  // The flash attention kernels' per-thread scratch (float32 and native bf16 alike: a bf16 run
  // may use both, one after the other), reused by every call.
  cpu::AttentionWorkspace attention;
  // The oneDNN attention's primitives (made before its parallel regions, executed by every thread).
  std::map<AttentionMatmulKey, AttentionMatmul> attention_matmuls;
  size_t packed_weights_bytes = 0;
  void* packed_weights_scratch(size_t bytes) {
    if (packed_weights_bytes < bytes) {
      const size_t rounded = (bytes + 63) / 64 * 64;
      packed_weights.reset(std::aligned_alloc(64, rounded));
      CHECK(packed_weights != nullptr, "out of memory allocating {} bytes of packed weights",
            rounded);
      packed_weights_bytes = rounded;
    }
    return packed_weights.get();
  }
};

// Runs the cached matmul primitive for `key` (created on first use) on raw pointers whose types
// are key.in (src, wei), key.out (dst) and float (bias). Defined in matmul.cpp.
namespace cpu {
void run_matmul(CpuBackend::Impl& impl, const MatmulKey& key, const void* src, const void* wei,
                const void* bias, void* dst);
}  // namespace cpu

}  // namespace nanogpt
