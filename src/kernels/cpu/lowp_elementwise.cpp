// Low-precision LayerNorm and GELU (ops_lowp.h): each widens a block of its 16-bit inputs to
// float, runs the float32 kernel on the block (inside the parallel loop, so that call runs on one
// thread; blocks of ~64K elements keep the cost of those nested regions negligible) and narrows
// the result. The LayerNorm backward, whose dweight/dbias reduction must not
// be split across threads, widens dout in chunks of rows into the context's scratch instead.
#include <omp.h>

#include <algorithm>
#include <vector>

#include "kernels/cpu/context_impl.h"
#include "kernels/cpu/convert.h"
#include "kernels/ops_lowp.h"

namespace nanogpt::cpu {

namespace {
constexpr int64_t kBlock = int64_t{1} << 16;  // elements per block of the widened kernels
}  // namespace

void layernorm_forward(KernelContext&, TypedPtr out, float* mean, float* rstd, const float* inp,
                       const float* weight, const float* bias, int64_t N, int C) {
  if (float* o = out.f32()) return layernorm_forward(o, mean, rstd, inp, weight, bias, N, C);
  const int64_t rows = std::max<int64_t>(1, kBlock / C);  // rows per block
  const int64_t blocks = (N + rows - 1) / rows;
#pragma omp parallel
  {
    std::vector<float> tmp(static_cast<size_t>(rows * C));  // (rows, C)
#pragma omp for schedule(static)
    for (int64_t k = 0; k < blocks; ++k) {
      const int64_t n0 = k * rows, m = std::min(rows, N - n0);
      layernorm_forward(tmp.data(), mean + n0, rstd + n0, inp + n0 * C, weight, bias, m, C);
      narrow(out.at(n0 * C), tmp.data(), m * C);
    }
  }
}

void layernorm_backward(KernelContext& ctx, float* dinp, float* dweight, float* dbias,
                        ConstTypedPtr dout, const float* inp, const float* weight,
                        const float* mean, const float* rstd, int64_t N, int C) {
  if (const float* d = dout.f32()) {
    return layernorm_backward(dinp, dweight, dbias, d, inp, weight, mean, rstd, N, C);
  }
  const int64_t rows = std::max<int64_t>(64, (int64_t{1} << 20) / C);  // about 4 MB of floats
  for (int64_t n0 = 0; n0 < N; n0 += rows) {
    const int64_t m = std::min(rows, N - n0);
    float* d = ctx.impl().scratch_f32(1, static_cast<size_t>(m * C));  // (m, C)
    convert(d, dout.at(n0 * C), m * C);
    layernorm_backward(dinp ? dinp + n0 * C : nullptr, dweight, dbias, d, inp + n0 * C, weight,
                       mean + n0, rstd + n0, m, C);
  }
}

void gelu_forward(KernelContext&, TypedPtr out, ConstTypedPtr inp, int64_t N, GeluKind kind) {
  if (out.f32() && inp.f32()) return gelu_forward(out.f32(), inp.f32(), N, kind);
  const int64_t blocks = (N + kBlock - 1) / kBlock;
#pragma omp parallel
  {
    std::vector<float> x(kBlock), y(kBlock);
#pragma omp for schedule(static)
    for (int64_t k = 0; k < blocks; ++k) {
      const int64_t i0 = k * kBlock, m = std::min(kBlock, N - i0);
      widen(x.data(), inp.at(i0), m);
      gelu_forward(y.data(), x.data(), m, kind);
      narrow(out.at(i0), y.data(), m);
    }
  }
}

void gelu_backward(KernelContext&, TypedPtr dinp, ConstTypedPtr inp, ConstTypedPtr dout, int64_t N,
                   GeluKind kind) {
  if (dinp.f32() && inp.f32() && dout.f32()) {
    return gelu_backward(dinp.f32(), inp.f32(), dout.f32(), N, kind);
  }
  const int64_t blocks = (N + kBlock - 1) / kBlock;
#pragma omp parallel
  {
    std::vector<float> x(kBlock), d(kBlock), g(kBlock);
#pragma omp for schedule(static)
    for (int64_t k = 0; k < blocks; ++k) {
      const int64_t i0 = k * kBlock, m = std::min(kBlock, N - i0);
      widen(x.data(), inp.at(i0), m);
      widen(d.data(), dout.at(i0), m);
      widen(g.data(), dinp.at(i0), m);
      gelu_backward(g.data(), x.data(), d.data(), m, kind);
      narrow(dinp.at(i0), g.data(), m);
    }
  }
}

}  // namespace nanogpt::cpu
