// Low-precision GELU (ops_lowp.h; the 16-bit LayerNorm is layernorm.cpp's). GELU in bf16 looks up
// tables of all 65536 bf16 inputs, built once per context with the float32 kernels' element code
// (gelu_math.h): the rounded gelu(x) for the forward, the float gelu'(x) that the backward
// multiplies by dout in a vector loop (a lookup is ~1.5x cheaper than the tanh/exp/division it
// replaces, and gives the same bits); relu2 in bf16 (cheaper computed than looked up) and other
// dtypes widen a block of 2K elements into stack buffers (in L1), run the same element code on it
// and narrow the result. Either way the same floats as the float32 kernel on widened inputs, one
// pass over memory. Compiled for every CPU target
// (foreach_target.h) and dispatched at run time.
#include "kernels/cpu/fixed_width_targets.h"  // first: its bf16 tables must give gelu.cpp's bits
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/lowp_elementwise.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <omp.h>

#include <algorithm>
#include <vector>

#include "kernels/cpu/context_impl.h"
#include "kernels/cpu/convert-inl.h"
#include "kernels/cpu/convert.h"
#include "kernels/cpu/gelu_math.h"
#include "kernels/cpu/parallel.h"
#include "kernels/ops_lowp.h"

HWY_BEFORE_NAMESPACE();
namespace nanogpt::cpu::HWY_NAMESPACE {

namespace {

// The tables of kind (CpuBackend::Impl::gelu_bf16 / gelu_grad_bf16), built on first use.
struct GeluTables {
  const uint16_t* out;  // (65536) bf16 bits of gelu(x)
  const float* grad;    // (65536) gelu'(x)
};
GeluTables gelu_tables(CpuBackend::Impl& impl, MlpActivation kind) {
  const int k = static_cast<int>(kind);  // MlpActivation's order: tanh, exact, relu2
  auto& out = impl.gelu_bf16[k];
  auto& grad = impl.gelu_grad_bf16[k];
  if (out.empty()) {
    // Through the float32 kernels' own vector loops (forward_serial, and backward_serial with
    // dout = 1): the compiler may contract the scalar forms of the element code differently.
    std::vector<float> x(65536), y(65536), ones(65536, 1.0f);
    for (uint32_t b = 0; b < 65536; ++b) x[b] = bf16_bits_to_float(static_cast<uint16_t>(b));
    gelu_math::forward_serial(y.data(), x.data(), 65536, kind);
    out.resize(65536);
    NarrowSpan(TypedPtr(out.data(), DType::kBF16), y.data(), 65536);
    grad.resize(65536);
    gelu_math::backward_serial<false>(grad.data(), x.data(), ones.data(), 65536, kind);
  }
  return {out.data(), grad.data()};
}

// out (n) = round(gelu(inp)) for bf16 bits: one lookup per element.
void gelu_forward_bf16(uint16_t* out, const uint16_t* inp, int64_t n, const GeluTables& t) {
  for (int64_t i = 0; i < n; ++i) out[i] = t.out[inp[i]];
}

// dinp (n) = round(dinp + dout * gelu'(inp)) for bf16 bits: gelu'(inp) looked up for 64 elements,
// then one vector loop; kAccumulate false: dinp = round(dout * gelu'(inp)), dinp not read (its
// values into a zeroed dinp).
template <bool kAccumulate>
void gelu_backward_bf16(uint16_t* dinp, const uint16_t* inp, const uint16_t* dout, int64_t n,
                        const GeluTables& t) {
  constexpr int64_t kChunk = 64;
  for (int64_t i0 = 0; i0 < n; i0 += kChunk) {
    const int64_t m = std::min(kChunk, n - i0);
    float g[kChunk];
    for (int64_t j = 0; j < m; ++j) g[j] = t.grad[inp[i0 + j]];
#pragma omp simd
    for (int64_t j = 0; j < m; ++j) {
      const float old = kAccumulate ? bf16_bits_to_float(dinp[i0 + j]) : 0.0f;
      dinp[i0 + j] = float_to_bf16_bits(old + bf16_bits_to_float(dout[i0 + j]) * g[j]);
    }
  }
}

// The bf16 backward over blocks in parallel.
template <bool kAccumulate>
void gelu_backward_bf16_blocks(TypedPtr dinp, ConstTypedPtr inp, ConstTypedPtr dout, int64_t N,
                               const GeluTables& tables);

const uint16_t* bf16_bits(ConstTypedPtr p) { return static_cast<const uint16_t*>(p.data); }
uint16_t* bf16_bits(TypedPtr p) { return static_cast<uint16_t*>(p.data); }

}  // namespace

// Whether bf16 inputs of `kind` go through the lookup tables: the GELUs; relu2 (a compare and a
// multiply) is cheaper computed on widened blocks than looked up element by element.
bool use_tables(MlpActivation kind) { return kind != MlpActivation::kRelu2; }

// dinp (N) (+)= dout * act'(inp) through widened blocks of kConvertBlock in L1 (any 16-bit dtype);
// kAccumulate false: dinp = 0 + dout * act'(inp), dinp not read (the bits of a zeroed dinp's).
template <bool kAccumulate>
void gelu_backward_widened(TypedPtr dinp, ConstTypedPtr inp, ConstTypedPtr dout, int64_t N,
                           MlpActivation kind) {
  const int64_t blocks = (N + kConvertBlock - 1) / kConvertBlock;
#pragma omp parallel for schedule(static) if (worth_parallel(4 * N))
  for (int64_t k = 0; k < blocks; ++k) {
    const int64_t i0 = k * kConvertBlock, m = std::min(kConvertBlock, N - i0);
    alignas(64) float x[kConvertBlock], d[kConvertBlock], g[kConvertBlock];
    WidenSpan(x, inp.at(i0), m);
    WidenSpan(d, dout.at(i0), m);
    if (kAccumulate) {
      WidenSpan(g, dinp.at(i0), m);
    } else {
      std::fill(g, g + m, 0.0f);
    }
    gelu_math::backward_serial(g, x, d, m, kind);
    NarrowSpan(dinp.at(i0), g, m);
  }
}

void GeluForwardLowp(CpuBackend& ctx, TypedPtr out, ConstTypedPtr inp, int64_t N,
                     MlpActivation kind) {
  if (out.f32() && inp.f32()) return cpu::gelu_forward(out.f32(), inp.f32(), N, kind);
  if (out.dtype == DType::kBF16 && inp.dtype == DType::kBF16 && use_tables(kind)) {
    const GeluTables tables = gelu_tables(ctx.impl(), kind);
    const int64_t blocks = (N + kConvertBlock - 1) / kConvertBlock;
#pragma omp parallel for schedule(static) if (worth_parallel(2 * N))
    for (int64_t k = 0; k < blocks; ++k) {
      const int64_t i0 = k * kConvertBlock, m = std::min(kConvertBlock, N - i0);
      gelu_forward_bf16(bf16_bits(out) + i0, bf16_bits(inp) + i0, m, tables);
    }
    return;
  }
  const int64_t blocks = (N + kConvertBlock - 1) / kConvertBlock;
#pragma omp parallel for schedule(static) if (worth_parallel(2 * N))
  for (int64_t k = 0; k < blocks; ++k) {
    const int64_t i0 = k * kConvertBlock, m = std::min(kConvertBlock, N - i0);
    alignas(64) float x[kConvertBlock];  // in place: x, then gelu(x)
    WidenSpan(x, inp.at(i0), m);
    gelu_math::forward_serial(x, x, m, kind);
    NarrowSpan(out.at(i0), x, m);
  }
}

void GeluBackwardLowp(CpuBackend& ctx, TypedPtr dinp, ConstTypedPtr inp, ConstTypedPtr dout,
                      int64_t N, MlpActivation kind) {
  if (dinp.f32() && inp.f32() && dout.f32()) {
    return cpu::gelu_backward(dinp.f32(), inp.f32(), dout.f32(), N, kind);
  }
  if (dinp.dtype == DType::kBF16 && inp.dtype == DType::kBF16 && dout.dtype == DType::kBF16 &&
      use_tables(kind)) {
    return gelu_backward_bf16_blocks<true>(dinp, inp, dout, N, gelu_tables(ctx.impl(), kind));
  }
  gelu_backward_widened<true>(dinp, inp, dout, N, kind);
}

void GeluBackwardOverwriteLowp(CpuBackend& ctx, TypedPtr dinp, ConstTypedPtr inp,
                               ConstTypedPtr dout, int64_t N, MlpActivation kind) {
  if (dinp.f32() && inp.f32() && dout.f32()) {
    return cpu::gelu_backward_overwrite(dinp.f32(), inp.f32(), dout.f32(), N, kind);
  }
  if (dinp.dtype == DType::kBF16 && inp.dtype == DType::kBF16 && dout.dtype == DType::kBF16 &&
      use_tables(kind)) {
    return gelu_backward_bf16_blocks<false>(dinp, inp, dout, N, gelu_tables(ctx.impl(), kind));
  }
  gelu_backward_widened<false>(dinp, inp, dout, N, kind);
}

namespace {

template <bool kAccumulate>
void gelu_backward_bf16_blocks(TypedPtr dinp, ConstTypedPtr inp, ConstTypedPtr dout, int64_t N,
                               const GeluTables& tables) {
  const int64_t blocks = (N + kConvertBlock - 1) / kConvertBlock;
#pragma omp parallel for schedule(static) if (worth_parallel(4 * N))
  for (int64_t k = 0; k < blocks; ++k) {
    const int64_t i0 = k * kConvertBlock, m = std::min(kConvertBlock, N - i0);
    gelu_backward_bf16<kAccumulate>(bf16_bits(dinp) + i0, bf16_bits(inp) + i0, bf16_bits(dout) + i0,
                                    m, tables);
  }
}

}  // namespace

}  // namespace nanogpt::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nanogpt::cpu {

HWY_EXPORT(GeluForwardLowp);
HWY_EXPORT(GeluBackwardLowp);
HWY_EXPORT(GeluBackwardOverwriteLowp);

void gelu_forward(CpuBackend& ctx, TypedPtr out, ConstTypedPtr inp, int64_t N, MlpActivation kind) {
  HWY_DYNAMIC_DISPATCH(GeluForwardLowp)(ctx, out, inp, N, kind);
}

void gelu_backward(CpuBackend& ctx, TypedPtr dinp, ConstTypedPtr inp, ConstTypedPtr dout,
                   int64_t N, MlpActivation kind) {
  HWY_DYNAMIC_DISPATCH(GeluBackwardLowp)(ctx, dinp, inp, dout, N, kind);
}

void gelu_backward_overwrite(CpuBackend& ctx, TypedPtr dinp, ConstTypedPtr inp,
                             ConstTypedPtr dout, int64_t N, MlpActivation kind) {
  HWY_DYNAMIC_DISPATCH(GeluBackwardOverwriteLowp)(ctx, dinp, inp, dout, N, kind);
}

}  // namespace nanogpt::cpu
#endif  // HWY_ONCE
