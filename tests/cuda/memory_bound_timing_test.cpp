// Timing report of the CUDA backend's memory-bound kernels and the GELU epilogues at GPT-2 124M's
// shapes (B 16, T 1024: N 16384 rows, C 768, V 50257 of 50304, bfloat16 activations): median of
// 10 runs, with the bytes each must move at least and the rate that gives. Prints figures for the
// bench notes (docs/benchmarks.md), asserts nothing (no timed assertions in tests). Skipped
// without a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "cuda_test_util.h"
#include "kernels/cuda/ops_cuda.h"

namespace nanogpt::cuda {
namespace {

using testing_cuda::CudaTest;
using testing_cuda::DeviceTensor;
using testing_cuda::median_ms;
using testing_cuda::random_vector;
using testing_cuda::rounded;

using CudaMemoryBoundTiming = CudaTest;

void report(const char* what, double ms, double bytes) {
  std::printf("[ timing ]   %-52s %8.3f ms  %7.0f GB/s\n", what, ms, bytes / ms * 1e-6);
}

TEST_F(CudaMemoryBoundTiming, TimingReport) {
  const int64_t N = 16384;
  const int C = 768, V = 50257, Vp = 50304;
  const int64_t NC = N * C;
  const DType h = DType::kBF16;
  DeviceTensor a(random_vector(NC, 1, 1.0f), DType::kF32),
      b(random_vector(NC, 2, 1.0f), DType::kF32);
  DeviceTensor res = DeviceTensor::nan(NC, DType::kF32),
               dinp(random_vector(NC, 3, 1.0f), DType::kF32);
  DeviceTensor out = DeviceTensor::nan(NC, h), dout(rounded(random_vector(NC, 4, 1.0f), h), h);
  DeviceTensor w(random_vector(C, 5, 1.0f), DType::kF32),
      bias(random_vector(C, 6, 1.0f), DType::kF32);
  DeviceTensor mean = DeviceTensor::nan(N, DType::kF32), rstd = DeviceTensor::nan(N, DType::kF32);
  DeviceTensor dw(std::vector<float>(C, 0.0f), DType::kF32),
      db(std::vector<float>(C, 0.0f), DType::kF32);
  std::printf("[ timing ] memory-bound kernels, N %lld C %d, bfloat16 activations:\n",
              static_cast<long long>(N), C);
  report("layernorm_forward (f32 in, bf16 out)", median_ms([&] {
           layernorm_forward(out.ptr(), mean.ptr().f32(), rstd.ptr().f32(), a.ptr().f32(),
                             w.ptr().f32(), bias.ptr().f32(), N, C, NormKind::kLayerNorm);
         }),
         NC * 6.0);
  report("residual_layernorm_forward (a + b -> res, out)", median_ms([&] {
           residual_layernorm_forward(res.ptr().f32(), out.ptr(), mean.ptr().f32(),
                                      rstd.ptr().f32(), a.ptr().f32(), b.ptr().f32(), w.ptr().f32(),
                                      bias.ptr().f32(), N, C, NormKind::kLayerNorm);
         }),
         NC * 14.0);
  DeviceTensor copy = DeviceTensor::nan(NC, h);
  report("layernorm_backward (dinp += , no copy)", median_ms([&] {
           layernorm_backward(ctx(), dinp.ptr().f32(), dw.ptr().f32(), db.ptr().f32(), dout.ptr(),
                              a.ptr().f32(), w.ptr().f32(), mean.ptr().f32(), rstd.ptr().f32(), N,
                              C, NormKind::kLayerNorm);
         }),
         NC * 14.0);
  report("layernorm_backward (dinp += , bf16 copy)", median_ms([&] {
           layernorm_backward(ctx(), dinp.ptr().f32(), dw.ptr().f32(), db.ptr().f32(), dout.ptr(),
                              a.ptr().f32(), w.ptr().f32(), mean.ptr().f32(), rstd.ptr().f32(), N,
                              C, NormKind::kLayerNorm, copy.ptr());
         }),
         NC * 16.0);
  report("residual_forward (f32)",
         median_ms([&] { residual_forward(res.ptr().f32(), a.ptr().f32(), b.ptr().f32(), NC); }),
         NC * 12.0);
  report("convert (f32 -> bf16)", median_ms([&] { convert(out.ptr(), a.ptr(), NC); }), NC * 6.0);

  // The MLP's GELU: (N, 4C) bf16, its own kernels and around the products.
  const int64_t n4 = 4 * NC;
  DeviceTensor pre(rounded(random_vector(n4, 7, 1.0f), h), h), act = DeviceTensor::nan(n4, h);
  DeviceTensor d4(rounded(random_vector(n4, 8, 1.0f), h), h);
  report("gelu_forward (bf16)",
         median_ms([&] { gelu_forward(act.ptr(), pre.ptr(), n4, MlpActivation::kTanh); }),
         n4 * 4.0);
  report("gelu_backward (bf16, in place)",
         median_ms([&] { gelu_backward(d4.ptr(), pre.ptr(), d4.ptr(), n4, MlpActivation::kTanh); }),
         n4 * 6.0);
  DeviceTensor fcw(rounded(random_vector(int64_t{4} * C * C, 9, 0.05f), h), h);
  DeviceTensor fcb(rounded(random_vector(4 * C, 10, 0.1f), h), h);
  const double fc_flop = 2.0 * NC * 4 * C;
  for (bool fuse : {false, true}) {
    const double ms = median_ms([&] {
      matmul_gelu_forward(ctx(), act.ptr(), pre.ptr(), out.ptr(), fcw.ptr(), fcb.ptr(), N, C, 4 * C,
                          MlpActivation::kTanh, fuse);
    });
    std::printf("[ timing ]   matmul_gelu_forward %-32s %8.3f ms  %7.0f TFLOP/s\n",
                fuse ? "(GELU_AUX_BIAS epilogue)" : "(product, then gelu_forward)", ms,
                fc_flop / ms * 1e-9);
  }
  DeviceTensor dwp(std::vector<float>(int64_t{4} * C * C, 0.0f), DType::kF32);
  DeviceTensor dbp(std::vector<float>(C, 0.0f), DType::kF32);
  for (bool fuse : {false, true}) {
    const double ms = median_ms([&] {
      matmul_gelu_backward(ctx(), d4.ptr(), dwp.ptr().f32(), dbp.ptr().f32(), dout.ptr(), act.ptr(),
                           fcw.ptr(), N, 4 * C, C, pre.ptr(), MlpActivation::kTanh, fuse);
    });
    std::printf("[ timing ]   matmul_gelu_backward %-31s %8.3f ms  %7.0f TFLOP/s\n",
                fuse ? "(DGELU epilogue)" : "(products, then gelu_backward)", ms,
                2 * fc_flop / ms * 1e-9);
  }

  // The classifier's loss: bf16 logits overwritten by their gradient, and float32 logits.
  const int64_t nv = N * Vp;
  // 16 random rows repeated (drawing 800M numbers on the host would take longer than the timing).
  auto tiled = [&](uint64_t seed) {
    const auto block = random_vector(16 * int64_t{Vp}, seed, 2.0f);
    std::vector<float> v(static_cast<size_t>(nv));
    for (size_t i = 0; i < v.size(); ++i) v[i] = block[i % block.size()];
    return v;
  };
  DeviceTensor z(tiled(11), h);
  DeviceTensor z32(tiled(12), DType::kF32);
  DeviceTensor dz = DeviceTensor::nan(nv, h), losses = DeviceTensor::nan(N, DType::kF32);
  std::vector<int> t(N);
  for (int64_t i = 0; i < N; ++i) t[i] = static_cast<int>((i * 7919) % V);
  auto targets = testing_cuda::to_device(t, "targets");
  report("crossentropy (bf16 logits, gradient in place)", median_ms([&] {
           crossentropy_forward_backward(losses.ptr().f32(), z.ptr(), z.ptr(), targets.data(),
                                         1.0f / N, N, V, Vp);
         }),
         nv * 4.0);
  report("crossentropy (f32 logits, bf16 gradient)", median_ms([&] {
           crossentropy_forward_backward(losses.ptr().f32(), dz.ptr(), z32.ptr(), targets.data(),
                                         1.0f / N, N, V, Vp);
         }),
         nv * 6.0);
  ctx().synchronize("timing");
}

}  // namespace
}  // namespace nanogpt::cuda
