// Low-precision fully connected layer (ops_lowp.h). bf16 inputs and weights run on oneDNN's bf16
// matmul (fp32 accumulation; dst float32 or bf16; backward accumulates through the sum post-op)
// when the CPU has native bf16 kernels. Every other combination (fp16, which has no arithmetic on
// CPUs without AVX512_FP16, mixed dtypes, bf16 on older CPUs) widens the inputs to float32 in
// chunks of rows and runs the float32 matmul: the same values, at the cost of the conversions.
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/check.h"
#include "core/cpu_info.h"
#include "kernels/cpu/context_impl.h"
#include "kernels/cpu/convert.h"
#include "kernels/cpu/matmul_loops.h"
#include "kernels/cpu/parallel.h"
#include "kernels/ops_lowp.h"

namespace nanogpt::cpu {

namespace {

bool use_native(CpuBackend& ctx, ConstTypedPtr a, ConstTypedPtr w, DType out) {
  return a.dtype == DType::kBF16 && w.dtype == DType::kBF16 &&
         (out == DType::kF32 || out == DType::kBF16) && native_matmul(ctx, DType::kBF16);
}

// Rows per chunk of the widening path: about 4M floats of the widest operand.
int64_t chunk_rows(int C, int OC) {
  return std::max<int64_t>(64, (int64_t{1} << 22) / std::max(C, OC));
}

// weight as float32: itself, or widened into scratch slot 0.
const float* float_weight(CpuBackend::Impl& impl, ConstTypedPtr weight, int64_t n) {
  if (const float* w = weight.f32()) return w;
  float* w = impl.scratch_f32(0, static_cast<size_t>(n));
  convert(w, weight, n);
  return w;
}

// inp rows as float32: themselves, or widened into scratch `slot`.
const float* float_rows(CpuBackend::Impl& impl, int slot, ConstTypedPtr p, int64_t n) {
  if (const float* f = p.f32()) return f;
  float* f = impl.scratch_f32(slot, static_cast<size_t>(n));
  convert(f, p, n);
  return f;
}

}  // namespace

bool native_matmul(CpuBackend& ctx, DType dtype, const char** impl_name) {
  auto& impl = ctx.impl();
  if (dtype == DType::kF32) {
    if (impl_name) *impl_name = "";
    return true;
  }
  if (dtype != DType::kBF16) {  // oneDNN 2.6 has f16 matmuls only on AVX512_FP16 CPUs
    if (impl_name) *impl_name = "";
    return false;
  }
  // Without bf16 dot products (AVX512_BF16; AMX CPUs have them too) oneDNN emulates bf16 on
  // AVX-512 at about a fifth of its fp32 rate (W2 at the avx512 cap: 33.8 s a step against 6.1 s
  // in float32): widening to float32 is faster there.
  if (!have_bf16_dot_products()) {
    if (impl_name) *impl_name = "";
    return false;
  }
  if (impl.native_bf16 < 0) {
    try {
      using dnnl::memory;
      const auto bf = memory::data_type::bf16;
      memory::desc a({64, 64}, bf, memory::dims{64, 1}), w({64, 64}, bf, memory::dims{1, 64}),
          d({64, 64}, memory::data_type::f32, memory::dims{64, 1});
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, w, d), impl.engine);
      impl.native_bf16_impl = pd.impl_info_str();
      impl.native_bf16 = impl.native_bf16_impl.find("ref") == std::string::npos ? 1 : 0;
    } catch (const dnnl::error&) {
      impl.native_bf16 = 0;
    }
  }
  if (impl_name) *impl_name = impl.native_bf16_impl.c_str();
  return impl.native_bf16 == 1;
}

void matmul_forward(CpuBackend& ctx, TypedPtr out, ConstTypedPtr inp, ConstTypedPtr weight,
                    const float* bias, int64_t N, int C, int OC) {
  CHECK(N > 0 && C > 0 && OC > 0, "matmul_forward: sizes must be positive, got N={} C={} OC={}", N,
        C, OC);
  auto& impl = ctx.impl();
  if (inp.f32() && weight.f32() && out.f32()) {
    return matmul_forward(ctx, out.f32(), inp.f32(), weight.f32(), bias, N, C, OC);
  }
  if (use_native(ctx, inp, weight, out.dtype)) {
    run_matmul(impl, {N, C, OC, bias != nullptr, MatmulKind::kForward, DType::kBF16, out.dtype},
               inp.data, weight.data, bias, out.data);
    return;
  }
  const float* w = float_weight(impl, weight, static_cast<int64_t>(OC) * C);
  const int64_t R = chunk_rows(C, OC);
  for (int64_t r0 = 0; r0 < N; r0 += R) {
    const int64_t rows = std::min(R, N - r0);
    const float* x = float_rows(impl, 1, inp.at(r0 * C), rows * C);
    if (float* o = out.f32()) {
      matmul_forward(ctx, o + r0 * OC, x, w, bias, rows, C, OC);
    } else {
      float* o32 = impl.scratch_f32(2, static_cast<size_t>(rows * OC));
      matmul_forward(ctx, o32, x, w, bias, rows, C, OC);
      convert(out.at(r0 * OC), o32, rows * OC);
    }
  }
}

void matmul_backward_overwrite(CpuBackend& ctx, TypedPtr dinp, float* dweight, float* dbias,
                               ConstTypedPtr dout, ConstTypedPtr inp, ConstTypedPtr weight,
                               int64_t N, int C, int OC) {
  CHECK(dinp, "matmul_backward_overwrite: dinp must not be null");
  CHECK(N > 0 && C > 0 && OC > 0,
        "matmul_backward_overwrite: sizes must be positive, got N={} C={} OC={}", N, C, OC);
  if (dinp.f32() && dout.f32() && inp.f32() && weight.f32()) {
    return matmul_backward_overwrite(ctx, dinp.f32(), dweight, dbias, dout.f32(), inp.f32(),
                                     weight.f32(), N, C, OC);
  }
  if (dout.dtype == DType::kBF16 && use_native(ctx, inp, weight, dinp.dtype)) {
    run_matmul(ctx.impl(),
               {N, C, OC, false, MatmulKind::kBackwardDataSet, DType::kBF16, dinp.dtype}, dout.data,
               weight.data, nullptr, dinp.data);
    return matmul_backward(ctx, TypedPtr(), dweight, dbias, dout, inp, weight, N, C, OC);
  }
  fill_zero(dinp, N * C);
  matmul_backward(ctx, dinp, dweight, dbias, dout, inp, weight, N, C, OC);
}

void matmul_backward(CpuBackend& ctx, TypedPtr dinp, float* dweight, float* dbias,
                     ConstTypedPtr dout, ConstTypedPtr inp, ConstTypedPtr weight, int64_t N, int C,
                     int OC) {
  CHECK(N > 0 && C > 0 && OC > 0, "matmul_backward: sizes must be positive, got N={} C={} OC={}", N,
        C, OC);
  auto& impl = ctx.impl();
  if (dout.f32() && inp.f32() && weight.f32() && (!dinp || dinp.f32())) {
    return matmul_backward(ctx, dinp.f32(), dweight, dbias, dout.f32(), inp.f32(), weight.f32(), N,
                           C, OC);
  }
  if (dout.dtype == DType::kBF16 && use_native(ctx, inp, weight, dinp ? dinp.dtype : DType::kF32)) {
    if (dinp) {
      run_matmul(impl, {N, C, OC, false, MatmulKind::kBackwardData, DType::kBF16, dinp.dtype},
                 dout.data, weight.data, nullptr, dinp.data);
    }
    if (dweight) {
      run_matmul(impl, {N, C, OC, false, MatmulKind::kBackwardWeight, DType::kBF16, DType::kF32},
                 dout.data, inp.data, nullptr, dweight);
    }
    if (dbias) column_sums_add(dbias, dout, N, OC);
    return;
  }
  const float* w = float_weight(impl, weight, static_cast<int64_t>(OC) * C);
  const int64_t R = chunk_rows(C, OC);
  for (int64_t r0 = 0; r0 < N; r0 += R) {
    const int64_t rows = std::min(R, N - r0);
    const float* d = float_rows(impl, 1, dout.at(r0 * OC), rows * OC);
    const float* x = dweight ? float_rows(impl, 2, inp.at(r0 * C), rows * C) : nullptr;
    float* di = nullptr;
    if (dinp) {
      di = dinp.f32() ? dinp.f32() + r0 * C : impl.scratch_f32(3, static_cast<size_t>(rows * C));
      if (!dinp.f32()) std::memset(di, 0, sizeof(float) * static_cast<size_t>(rows * C));
    }
    matmul_backward(ctx, di, dweight, dbias, d, x, w, rows, C, OC);
    if (dinp && !dinp.f32()) convert_add(dinp.at(r0 * C), di, rows * C);
  }
}

}  // namespace nanogpt::cpu
