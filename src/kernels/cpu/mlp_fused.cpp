// The fused MLP ops (ops_lowp.h: matmul_gelu_forward, gelu_matmul_backward) on the CPU, row block
// by row block, so that what one step writes is still in cache when the next reads it:
//   forward:  per block, oneDNN's matmul (+ bias) writes the block of fch, then the GELU reads it
//             back into fch_gelu;
//   backward: per block, gelu(pre) is recomputed into a scratch block, dweight += dout^T .
//   gelu(pre),
//             d(gelu) = dout . W overwrites a second scratch block (a matmul without the sum
//             post-op), and dpre = d(gelu) * gelu'(pre) is written once. The (N, C) gelu(pre) and
//             d(gelu) never go through memory whole, and dpre needs no zeroing pass.
// Values: those of the unfused ops, except that dweight is summed block by block (another order of
// the same float32 sums). Native matmuls (float32; bf16 on AVX512_BF16) use blocks of about 2 MB
// of float32; the widening path (fp16 here) uses the widening matmul's own chunk of rows, so the
// weight is widened no more often than unfused.
// Small float32 products (small_gemm_runs: nanoGPT's CPU recipe, unless the run's small products
// way is oneDNN) skip the row blocks: each op is
// one parallel region of small_gemm (small_gemm_gelu_forward / _backward), with the values of the
// unfused float32 ops bit for bit (dweight too: small_gemm sums every element in row order).
#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <vector>

#include "core/check.h"
#include "kernels/cpu/context_impl.h"
#include "kernels/cpu/convert.h"
#include "kernels/cpu/small_gemm.h"
#include "kernels/ops_lowp.h"

namespace nanogpt::cpu {

namespace {

// Floats of output per row block on the native paths.
constexpr int64_t kBlockFloats = int64_t{1} << 21;
// Elements per task of the GELU derivative epilogue (x, d(gelu), dpre of one task stay in L2).
constexpr int64_t kEpilogueBlock = int64_t{1} << 14;

bool all_f32(std::initializer_list<DType> dtypes) {
  return std::all_of(dtypes.begin(), dtypes.end(), [](DType t) { return t == DType::kF32; });
}

// Whether a matmul of a (activations) by w writing `out` runs without widening.
bool native(CpuBackend& ctx, ConstTypedPtr a, ConstTypedPtr w, DType out) {
  if (a.dtype == DType::kF32 && w.dtype == DType::kF32 && out == DType::kF32) return true;
  return a.dtype == DType::kBF16 && w.dtype == DType::kBF16 &&
         (out == DType::kF32 || out == DType::kBF16) && native_matmul(ctx, DType::kBF16);
}

// Rows per block for blocks `width` wide: about kBlockFloats (a multiple of 64 rows) when native,
// else the widening matmul's chunk (4M floats of its widest operand, `wide`).
int64_t block_rows(bool native_path, int64_t width, int64_t wide) {
  if (!native_path) return std::max<int64_t>(64, (int64_t{1} << 22) / wide);
  return std::max<int64_t>(64, kBlockFloats / width / 64 * 64);
}

// n elements of `dtype` in scratch slot `slot` (float-sized storage).
TypedPtr scratch_block(CpuBackend::Impl& impl, int slot, int64_t n, DType dtype) {
  const size_t floats = (static_cast<size_t>(n) * dtype_size(dtype) + 3) / 4;
  return {impl.scratch_f32(slot, floats), dtype};
}

// dinp (rows, C) = dout (rows, OC) . weight (OC, C), overwritten.
void backward_data_set(CpuBackend& ctx, bool native_path, TypedPtr dinp, ConstTypedPtr dout,
                       ConstTypedPtr weight, int64_t rows, int C, int OC) {
  if (native_path) {
    run_matmul(ctx.impl(), {rows, C, OC, false, MatmulKind::kBackwardDataSet, dout.dtype, dinp.dtype},
               dout.data, weight.data, nullptr, dinp.data);
    return;
  }
  std::memset(dinp.data, 0, static_cast<size_t>(rows * C) * dtype_size(dinp.dtype));
  matmul_backward(ctx, dinp, nullptr, nullptr, dout, /*inp, unused without dweight=*/dout, weight,
                  rows, C, OC);
}

// dpre (n) = dact * gelu'(pre), overwritten: each task runs the float32 gelu_backward (on its one
// thread) into a zeroed float block, so the values are those of the unfused accumulation into a
// zeroed dpre.
void gelu_backward_set(TypedPtr dpre, ConstTypedPtr pre, ConstTypedPtr dact, int64_t n,
                       MlpActivation kind) {
  const int64_t blocks = (n + kEpilogueBlock - 1) / kEpilogueBlock;
  if (dpre.f32() && pre.f32() && dact.f32()) {
    float* d = dpre.f32();
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < blocks; ++k) {
      const int64_t i0 = k * kEpilogueBlock, m = std::min(kEpilogueBlock, n - i0);
      std::fill(d + i0, d + i0 + m, 0.0f);
      gelu_backward(d + i0, pre.f32() + i0, dact.f32() + i0, m, kind);
    }
    return;
  }
#pragma omp parallel
  {
    std::vector<float> x(kEpilogueBlock), dy(kEpilogueBlock), g(kEpilogueBlock);
#pragma omp for schedule(static)
    for (int64_t k = 0; k < blocks; ++k) {
      const int64_t i0 = k * kEpilogueBlock, m = std::min(kEpilogueBlock, n - i0);
      widen(x.data(), pre.at(i0), m);
      widen(dy.data(), dact.at(i0), m);
      std::fill(g.begin(), g.begin() + m, 0.0f);
      gelu_backward(g.data(), x.data(), dy.data(), m, kind);
      narrow(dpre.at(i0), g.data(), m);
    }
  }
}

}  // namespace

bool mlp_fusion_one_region(const CpuBackend& ctx, DType dtype, int64_t N, int C, int OC) {
  return dtype == DType::kF32 && small_gemm_runs(ctx, N, C, OC);
}

void matmul_gelu_forward(CpuBackend& ctx, TypedPtr fch, TypedPtr fch_gelu, ConstTypedPtr inp,
                         ConstTypedPtr weight, const float* bias, int64_t N, int C, int OC,
                         MlpActivation kind) {
  CHECK(N > 0 && C > 0 && OC > 0,
        "matmul_gelu_forward: sizes must be positive, got N={} C={} OC={}", N, C, OC);
  if (all_f32({fch.dtype, fch_gelu.dtype, inp.dtype, weight.dtype}) &&
      mlp_fusion_one_region(ctx, DType::kF32, N, C, OC)) {
    small_gemm_gelu_forward(fch.f32(), fch_gelu.f32(), inp.f32(), weight.f32(), bias, N, C, OC,
                            kind);
    return;
  }
  const int64_t R = block_rows(native(ctx, inp, weight, fch.dtype), OC, std::max(C, OC));
  for (int64_t r0 = 0; r0 < N; r0 += R) {
    const int64_t rows = std::min(R, N - r0);
    matmul_forward(ctx, fch.at(r0 * OC), inp.at(r0 * C), weight, bias, rows, C, OC);
    gelu_forward(ctx, fch_gelu.at(r0 * OC), fch.at(r0 * OC), rows * OC, kind);
  }
}

void gelu_matmul_backward(CpuBackend& ctx, TypedPtr dpre, float* dweight, float* dbias,
                          ConstTypedPtr dout, ConstTypedPtr pre, ConstTypedPtr weight, int64_t N,
                          int C, int OC, MlpActivation kind) {
  CHECK(N > 0 && C > 0 && OC > 0,
        "gelu_matmul_backward: sizes must be positive, got N={} C={} OC={}", N, C, OC);
  auto& impl = ctx.impl();
  const bool nat = pre.dtype == dout.dtype && native(ctx, dout, weight, dpre.dtype);
  // dbias: the column sums over all rows at once, as the unfused matmul_backward sums them.
  if (all_f32({dpre.dtype, dout.dtype, pre.dtype, weight.dtype}) &&
      mlp_fusion_one_region(ctx, DType::kF32, N, C, OC)) {
    small_gemm_gelu_backward(dpre.f32(), dweight, dbias, dout.f32(), pre.f32(), weight.f32(), N, C,
                             OC, kind);
    return;
  }
  if (dbias) matmul_backward(ctx, TypedPtr(), nullptr, dbias, dout, pre, weight, N, C, OC);
  const int64_t R = std::min(N, block_rows(nat, C, std::max(C, OC)));
  const TypedPtr act = scratch_block(impl, 4, R * C, pre.dtype);    // (R, C) gelu(pre)
  const TypedPtr dact = scratch_block(impl, 5, R * C, dpre.dtype);  // (R, C) d(gelu(pre))
  for (int64_t r0 = 0; r0 < N; r0 += R) {
    const int64_t rows = std::min(R, N - r0);
    const ConstTypedPtr pre_b = pre.at(r0 * C), dout_b = dout.at(r0 * OC);
    gelu_forward(ctx, act, pre_b, rows * C, kind);
    if (dweight) matmul_backward(ctx, TypedPtr(), dweight, nullptr, dout_b, act, weight, rows, C, OC);
    backward_data_set(ctx, nat, dact, dout_b, weight, rows, C, OC);
    gelu_backward_set(dpre.at(r0 * C), pre_b, dact, rows * C, kind);
  }
}

}  // namespace nanogpt::cpu
