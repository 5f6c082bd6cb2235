// Fast fully connected layer through oneDNN fp32 matmul: out = inp . W^T + b; backward
// dinp += dout . W and dweight += dout^T . inp (sum post-op accumulates), dbias by our own
// column reduction. Weights are described by strides (no transposed copies), except that 16-bit
// forward and backward-data products of many rows reorder them into oneDNN's blocked layout
// first (packs_weights). N == 1 (one-token decoding) is a matrix-vector product bound by reading
// W once; it runs on our own GEMV instead (matmul_loops.h, with the column sums).
// Small float32 products (small_gemm_fits: nanoGPT's CPU recipe) run on our own tile GEMM
// (small_gemm.h) unless the run's small products way is oneDNN (small_gemm_runs).
#include <omp.h>

#include <algorithm>
#include <unordered_map>
#include <vector>

#include "core/check.h"
#include "kernels/cpu/context_impl.h"
#include "kernels/cpu/matmul_loops.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/small_gemm.h"
#include "kernels/ops.h"

namespace nanogpt::cpu {

namespace {

using dnnl::memory;
using Dt = memory::data_type;

Dt dnnl_type(DType t) {
  switch (t) {
    case DType::kF32: return Dt::f32;
    case DType::kBF16: return Dt::bf16;
    case DType::kF16: return Dt::f16;
  }
  return Dt::f32;
}

// kPackWeightsMinRows (context_impl.h): whether this product reorders its weights first.
bool packs_weights(const MatmulKey& k) {
  return k.in != DType::kF32 && k.n >= kPackWeightsMinRows &&
         (k.kind == MatmulKind::kForward || k.kind == MatmulKind::kBackwardData ||
          k.kind == MatmulKind::kBackwardDataSet);
}

// A (rows, cols) matrix of `t` with the given strides.
memory::desc mat(int64_t rows, int64_t cols, int64_t rs, int64_t cs, Dt t = Dt::f32) {
  return memory::desc({rows, cols}, t, memory::dims{rs, cs});
}

CachedMatmul make_matmul(dnnl::engine& engine, const MatmulKey& k) {
  memory::desc src, wei, dst, bias;
  dnnl::primitive_attr attr;
  const Dt in = dnnl_type(k.in), out = dnnl_type(k.out);
  if (k.kind == MatmulKind::kForward) {
    src = mat(k.n, k.c, k.c, 1, in);     // inp (N,C)
    wei = mat(k.c, k.oc, 1, k.c, in);    // W^T (C,OC) viewing W (OC,C)
    dst = mat(k.n, k.oc, k.oc, 1, out);  // out (N,OC)
    if (k.bias) bias = mat(1, k.oc, k.oc, 1);
  } else {
    if (k.kind != MatmulKind::kBackwardDataSet) {
      dnnl::post_ops po;
      po.append_sum(1.0f);  // dst += result
      attr.set_post_ops(po);
    }
    if (k.kind == MatmulKind::kBackwardData || k.kind == MatmulKind::kBackwardDataSet) {
      src = mat(k.n, k.oc, k.oc, 1, in);  // dout (N,OC)
      wei = mat(k.oc, k.c, k.c, 1, in);   // W (OC,C)
      dst = mat(k.n, k.c, k.c, 1, out);   // dinp (N,C)
    } else {
      src = mat(k.oc, k.n, 1, k.oc, in);  // dout^T (OC,N)
      wei = mat(k.n, k.c, k.c, 1, in);    // inp (N,C)
      dst = mat(k.oc, k.c, k.c, 1, out);  // dweight (OC,C)
    }
  }
  const memory::desc plain_wei = wei;
  if (packs_weights(k)) wei = memory::desc(plain_wei.dims(), in, memory::format_tag::any);
  dnnl::matmul::desc desc =
      k.bias ? dnnl::matmul::desc(src, wei, bias, dst) : dnnl::matmul::desc(src, wei, dst);
  dnnl::matmul::primitive_desc pd(desc, attr, engine);
  CachedMatmul mm{pd, dnnl::matmul(pd), plain_wei, std::nullopt};
  if (pd.weights_desc() != plain_wei) {
    mm.pack.emplace(dnnl::reorder::primitive_desc(engine, plain_wei, engine, pd.weights_desc()));
  }
  return mm;
}

CachedMatmul& get_matmul(CpuBackend::Impl& impl, const MatmulKey& key) {
  auto it = impl.matmuls.find(key);
  if (it != impl.matmuls.end()) return it->second;
  if (impl.matmuls.size() >= CpuBackend::Impl::kMaxCached) impl.matmuls.clear();
  return impl.matmuls.emplace(key, make_matmul(impl.engine, key)).first->second;
}

}  // namespace

void run_matmul(CpuBackend::Impl& impl, const MatmulKey& key, const void* src, const void* wei,
                const void* bias, void* dst) {
  CachedMatmul& mm = get_matmul(impl, key);
  const auto& pd = mm.pd;
  memory weights(pd.weights_desc(), impl.engine, const_cast<void*>(wei));
  if (mm.pack) {  // plain weights -> the primitive's blocked layout
    memory plain(mm.plain_weights, impl.engine, const_cast<void*>(wei));
    weights.set_data_handle(impl.packed_weights_scratch(pd.weights_desc().get_size()));
    mm.pack->execute(impl.stream, plain, weights);
  }
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC, memory(pd.src_desc(), impl.engine, const_cast<void*>(src))},
      {DNNL_ARG_WEIGHTS, weights},
      {DNNL_ARG_DST, memory(pd.dst_desc(), impl.engine, dst)}};
  if (bias) {
    args.emplace(DNNL_ARG_BIAS, memory(pd.bias_desc(), impl.engine, const_cast<void*>(bias)));
  }
  mm.prim.execute(impl.stream, args);
  impl.stream.wait();
}

void matmul_forward(CpuBackend& ctx, float* out, const float* inp, const float* weight,
                    const float* bias, int64_t N, int C, int OC) {
  CHECK(N > 0 && C > 0 && OC > 0, "matmul_forward: sizes must be positive, got N={} C={} OC={}", N,
        C, OC);
  if (N == 1) {
    gemv_forward(out, inp, weight, bias, C, OC);
    return;
  }
  if (small_gemm_runs(ctx, N, C, OC)) {
    small_gemm_forward(out, inp, weight, bias, N, C, OC);
    return;
  }
  run_matmul(ctx.impl(), {N, C, OC, bias != nullptr, MatmulKind::kForward}, inp, weight, bias,
             out);
}

namespace {

// matmul_backward, dinp accumulated (dinp += dout . W) or overwritten (dinp = dout . W).
void backward(CpuBackend& ctx, float* dinp, bool accumulate_dinp, float* dweight, float* dbias,
              const float* dout, const float* inp, const float* weight, int64_t N, int C, int OC) {
  CHECK(N > 0 && C > 0 && OC > 0, "matmul_backward: sizes must be positive, got N={} C={} OC={}", N,
        C, OC);
  auto& impl = ctx.impl();
  if (small_gemm_runs(ctx, N, C, OC)) {  // dbias in the same region
    small_gemm_backward(dinp, accumulate_dinp, dweight, dbias, dout, inp, weight, N, C, OC);
    return;
  }
  if (dinp) {
    const MatmulKind kind =
        accumulate_dinp ? MatmulKind::kBackwardData : MatmulKind::kBackwardDataSet;
    run_matmul(impl, {N, C, OC, false, kind}, dout, weight, nullptr, dinp);
  }
  if (dweight) {
    run_matmul(impl, {N, C, OC, false, MatmulKind::kBackwardWeight}, dout, inp, nullptr, dweight);
  }
  if (dbias) column_sums_add(dbias, dout, N, OC);
}

}  // namespace

void matmul_backward(CpuBackend& ctx, float* dinp, float* dweight, float* dbias,
                     const float* dout, const float* inp, const float* weight, int64_t N, int C,
                     int OC) {
  backward(ctx, dinp, true, dweight, dbias, dout, inp, weight, N, C, OC);
}

void matmul_backward_overwrite(CpuBackend& ctx, float* dinp, float* dweight, float* dbias,
                               const float* dout, const float* inp, const float* weight, int64_t N,
                               int C, int OC) {
  CHECK(dinp != nullptr, "matmul_backward_overwrite: dinp must not be null");
  backward(ctx, dinp, false, dweight, dbias, dout, inp, weight, N, C, OC);
}

}  // namespace nanogpt::cpu
