// Low-precision LayerNorm and GELU (ops_lowp.h). LayerNorm works row by row with the float32
// kernels' row code (layernorm_impl.h): the forward (also fused with the float32 residual add)
// rounds each float row once into its 16-bit output; the backward widens one dout row at a time,
// so it computes exactly the float32 kernel on the widened dout. GELU in bf16 widens, computes
// (the float32 kernels' element code, gelu_math.h) and rounds each element in registers, in one
// vector loop; other dtypes widen a block of 2K elements into stack buffers (in L1), run the same
// element code on it and narrow the result. Either way the same floats as the float32 kernel on
// widened inputs, one pass over memory.
#include <omp.h>

#include <algorithm>
#include <vector>

#include "kernels/cpu/context_impl.h"
#include "kernels/cpu/convert.h"
#include "kernels/cpu/gelu_math.h"
#include "kernels/cpu/layernorm_impl.h"
#include "kernels/cpu/parallel.h"
#include "kernels/ops_lowp.h"

namespace nanogpt::cpu {

void layernorm_forward(KernelContext&, TypedPtr out, float* mean, float* rstd, const float* inp,
                       const float* weight, const float* bias, int64_t N, int C) {
  if (float* o = out.f32()) return layernorm_forward(o, mean, rstd, inp, weight, bias, N, C);
#pragma omp parallel if (worth_parallel(2 * N * C))
  {
    std::vector<float> row(static_cast<size_t>(C));  // one normalized row before rounding
#pragma omp for schedule(static)
    for (int64_t n = 0; n < N; ++n) {
      layernorm_row(row.data(), mean + n, rstd + n, inp + n * C, weight, bias, C);
      narrow(out.at(n * C), row.data(), C);
    }
  }
}

void residual_layernorm_forward(KernelContext&, float* res, TypedPtr out, float* mean, float* rstd,
                                const float* a, const float* b, const float* weight,
                                const float* bias, int64_t N, int C) {
  if (float* o = out.f32()) {
    return residual_layernorm_forward(res, o, mean, rstd, a, b, weight, bias, N, C);
  }
#pragma omp parallel if (worth_parallel(4 * N * C))
  {
    std::vector<float> row(static_cast<size_t>(C));  // one normalized row before rounding
#pragma omp for schedule(static)
    for (int64_t n = 0; n < N; ++n) {
      float* r = res + n * C;  // (C) float32 residual stream
#pragma omp simd
      for (int c = 0; c < C; ++c) r[c] = a[n * C + c] + b[n * C + c];
      layernorm_row(row.data(), mean + n, rstd + n, r, weight, bias, C);
      narrow(out.at(n * C), row.data(), C);
    }
  }
}

void layernorm_backward(KernelContext&, float* dinp, float* dweight, float* dbias,
                        ConstTypedPtr dout, const float* inp, const float* weight,
                        const float* mean, const float* rstd, int64_t N, int C) {
  if (const float* d = dout.f32()) {
    return layernorm_backward(dinp, dweight, dbias, d, inp, weight, mean, rstd, N, C);
  }
  layernorm_backward_rows(
      dinp, dweight, dbias,
      [dout, C](int64_t n, float* buf) {
        widen(buf, dout.at(n * C), C);
        return static_cast<const float*>(buf);
      },
      inp, weight, mean, rstd, N, C);
}

namespace {

// out (n) = round(gelu(inp)) for bf16 bits, element by element in registers.
void gelu_forward_bf16(uint16_t* out, const uint16_t* inp, int64_t n, GeluKind kind) {
  if (kind == GeluKind::kTanh) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
      out[i] = float_to_bf16_bits(gelu_math::gelu_tanh(bf16_bits_to_float(inp[i])));
    }
  } else {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
      out[i] = float_to_bf16_bits(gelu_math::gelu_erf(bf16_bits_to_float(inp[i])));
    }
  }
}

// dinp (n) = round(dinp + dout * gelu'(inp)) for bf16 bits, element by element in registers;
// kAccumulate false: dinp = round(dout * gelu'(inp)), dinp not read (its values into a zeroed
// dinp).
template <bool kAccumulate>
void gelu_backward_bf16(uint16_t* dinp, const uint16_t* inp, const uint16_t* dout, int64_t n,
                        GeluKind kind) {
  auto old = [dinp](int64_t i) { return kAccumulate ? bf16_bits_to_float(dinp[i]) : 0.0f; };
  if (kind == GeluKind::kTanh) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
      const float d = bf16_bits_to_float(dout[i]);
      dinp[i] =
          float_to_bf16_bits(old(i) + d * gelu_math::gelu_tanh_grad(bf16_bits_to_float(inp[i])));
    }
  } else {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
      const float d = bf16_bits_to_float(dout[i]);
      dinp[i] =
          float_to_bf16_bits(old(i) + d * gelu_math::gelu_erf_grad(bf16_bits_to_float(inp[i])));
    }
  }
}

// The bf16 backward over blocks in parallel.
template <bool kAccumulate>
void gelu_backward_bf16_blocks(TypedPtr dinp, ConstTypedPtr inp, ConstTypedPtr dout, int64_t N,
                               GeluKind kind);

const uint16_t* bf16_bits(ConstTypedPtr p) { return static_cast<const uint16_t*>(p.data); }
uint16_t* bf16_bits(TypedPtr p) { return static_cast<uint16_t*>(p.data); }

}  // namespace

void gelu_forward(KernelContext&, TypedPtr out, ConstTypedPtr inp, int64_t N, GeluKind kind) {
  if (out.f32() && inp.f32()) return gelu_forward(out.f32(), inp.f32(), N, kind);
  if (out.dtype == DType::kBF16 && inp.dtype == DType::kBF16) {
    const int64_t blocks = (N + kConvertBlock - 1) / kConvertBlock;
#pragma omp parallel for schedule(static) if (worth_parallel(2 * N))
    for (int64_t k = 0; k < blocks; ++k) {
      const int64_t i0 = k * kConvertBlock, m = std::min(kConvertBlock, N - i0);
      gelu_forward_bf16(bf16_bits(out) + i0, bf16_bits(inp) + i0, m, kind);
    }
    return;
  }
  const int64_t blocks = (N + kConvertBlock - 1) / kConvertBlock;
#pragma omp parallel for schedule(static) if (worth_parallel(2 * N))
  for (int64_t k = 0; k < blocks; ++k) {
    const int64_t i0 = k * kConvertBlock, m = std::min(kConvertBlock, N - i0);
    alignas(64) float x[kConvertBlock];  // in place: x, then gelu(x)
    widen(x, inp.at(i0), m);
    gelu_math::forward_serial(x, x, m, kind);
    narrow(out.at(i0), x, m);
  }
}

void gelu_backward(KernelContext&, TypedPtr dinp, ConstTypedPtr inp, ConstTypedPtr dout, int64_t N,
                   GeluKind kind) {
  if (dinp.f32() && inp.f32() && dout.f32()) {
    return gelu_backward(dinp.f32(), inp.f32(), dout.f32(), N, kind);
  }
  if (dinp.dtype == DType::kBF16 && inp.dtype == DType::kBF16 && dout.dtype == DType::kBF16) {
    return gelu_backward_bf16_blocks<true>(dinp, inp, dout, N, kind);
  }
  const int64_t blocks = (N + kConvertBlock - 1) / kConvertBlock;
#pragma omp parallel for schedule(static) if (worth_parallel(4 * N))
  for (int64_t k = 0; k < blocks; ++k) {
    const int64_t i0 = k * kConvertBlock, m = std::min(kConvertBlock, N - i0);
    alignas(64) float x[kConvertBlock], d[kConvertBlock], g[kConvertBlock];
    widen(x, inp.at(i0), m);
    widen(d, dout.at(i0), m);
    widen(g, dinp.at(i0), m);
    gelu_math::backward_serial(g, x, d, m, kind);
    narrow(dinp.at(i0), g, m);
  }
}

void gelu_backward_overwrite(KernelContext& ctx, TypedPtr dinp, ConstTypedPtr inp,
                             ConstTypedPtr dout, int64_t N, GeluKind kind) {
  if (dinp.f32() && inp.f32() && dout.f32()) {
    return gelu_backward_overwrite(dinp.f32(), inp.f32(), dout.f32(), N, kind);
  }
  if (dinp.dtype == DType::kBF16 && inp.dtype == DType::kBF16 && dout.dtype == DType::kBF16) {
    return gelu_backward_bf16_blocks<false>(dinp, inp, dout, N, kind);
  }
  fill_zero(dinp, N);
  gelu_backward(ctx, dinp, inp, dout, N, kind);
}

namespace {

template <bool kAccumulate>
void gelu_backward_bf16_blocks(TypedPtr dinp, ConstTypedPtr inp, ConstTypedPtr dout, int64_t N,
                               GeluKind kind) {
  const int64_t blocks = (N + kConvertBlock - 1) / kConvertBlock;
#pragma omp parallel for schedule(static) if (worth_parallel(4 * N))
  for (int64_t k = 0; k < blocks; ++k) {
    const int64_t i0 = k * kConvertBlock, m = std::min(kConvertBlock, N - i0);
    gelu_backward_bf16<kAccumulate>(bf16_bits(dinp) + i0, bf16_bits(inp) + i0, bf16_bits(dout) + i0,
                                    m, kind);
  }
}

}  // namespace

}  // namespace nanogpt::cpu
