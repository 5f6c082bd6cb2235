// cuda::matmul_forward / matmul_backward (cuBLASLt) against the scalar reference (ref::matmul_*):
// float32 with TF32 and exact float32, bfloat16 storage with float32 or bfloat16 outputs, bias,
// accumulate, odd sizes and less aligned pointers. Outputs the GPU overwrites are poisoned with NaN
// first; the reference accumulates, so it starts from zeros (activation gradient) or from the same
// initial values as the GPU's accumulating outputs (parameter gradients). Skipped without a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "core/check.h"
#include "cuda_test_util.h"
#include "kernels/cuda/cuda_context.h"
#include "kernels/cuda/device_memory.h"
#include "kernels/cuda/ops_cuda.h"
#include "kernels/ops.h"

namespace nanogpt::cuda {
namespace {

using testing_cuda::DeviceTensor;
using testing_cuda::random_vector;
using testing_cuda::relative_error;
using testing_cuda::rounded;

// relative_error(got, want, base) < tol; with NANOGPT_TEST_VERBOSE set, prints the error (margins).
void expect_rel(const std::vector<float>& got, const std::vector<float>& want, double tol,
                const std::string& what, const std::vector<float>* base = nullptr) {
  const double err = relative_error(got, want, base);
  if (std::getenv("NANOGPT_TEST_VERBOSE"))
    std::printf("    %-40s err %.3g (tol %.3g)\n", what.c_str(), err, tol);
  EXPECT_LT(err, tol) << what;
}

struct MatmulCase {
  DType dtype;      // inp, weight, dout (and dinp)
  DType out_dtype;  // forward output (and bias)
  bool tf32;
  double tol;
};

// TF32: 10 mantissa bits; exact float32; bfloat16 storage (8 bits).
const MatmulCase kCases[] = {
    {DType::kF32, DType::kF32, true, 3e-3},
    {DType::kF32, DType::kF32, false, 1e-5},
    {DType::kBF16, DType::kBF16, false, 2e-2},
    {DType::kBF16, DType::kF32, false, 2e-2},
};

std::string case_name(const MatmulCase& c) {
  return std::string(dtype_name(c.dtype)) + "->" + dtype_name(c.out_dtype) +
         (c.dtype == DType::kF32 ? (c.tf32 ? " tf32" : " exact") : "");
}

// Forward with and without bias, on pointers offset by `offset` elements from their allocations
// (offset 1: 4- or 2-byte aligned, the heuristic's and the epilogue's fallbacks).
void check_forward(const MatmulCase& c, int64_t N, int C, int OC, bool with_bias, int offset) {
  SCOPED_TRACE(case_name(c) + (with_bias ? " bias" : " no bias") + " offset " +
               std::to_string(offset) + " N " + std::to_string(N));
  CudaContext ctx(c.tf32);
  // Inputs rounded to the storage type: the reference sees exactly what the GPU reads.
  const auto inp = rounded(random_vector(N * C, 1, 1.0f), c.dtype);
  const auto weight = rounded(random_vector(static_cast<int64_t>(OC) * C, 2, 0.2f), c.dtype);
  const auto bias = rounded(random_vector(OC, 3, 1.0f), c.out_dtype);
  std::vector<float> want(N * OC);
  ref::matmul_forward(want.data(), inp.data(), weight.data(), with_bias ? bias.data() : nullptr, N,
                      C, OC);

  DeviceTensor d_inp(inp, c.dtype, offset), d_weight(weight, c.dtype, offset);
  DeviceTensor d_bias(bias, c.out_dtype, offset);
  DeviceTensor d_out = DeviceTensor::nan(N * OC, c.out_dtype, offset);
  matmul_forward(ctx, d_out.ptr(), d_inp.ptr(), d_weight.ptr(),
                 with_bias ? d_bias.ptr() : ConstTypedPtr{}, N, C, OC);
  ctx.synchronize("matmul_forward");
  expect_rel(d_out.download(), want, c.tol, "out");
}

TEST(CudaMatmul, Forward) {
  SKIP_WITHOUT_CUDA_DEVICE();
  for (const auto& c : kCases) {
    for (bool bias : {false, true}) {
      check_forward(c, 37, 97, 53, bias, 0);
      check_forward(c, 256, 128, 192, bias, 0);
    }
    check_forward(c, 37, 97, 53, true, 1);
    check_forward(c, 64, 64, 96, true, 1);
  }
}

// accumulate: out += inp @ weight^T (no bias even when one is passed).
TEST(CudaMatmul, ForwardAccumulate) {
  SKIP_WITHOUT_CUDA_DEVICE();
  const int64_t N = 37;
  const int C = 97, OC = 53;
  for (const auto& c : kCases) {
    SCOPED_TRACE(case_name(c));
    CudaContext ctx(c.tf32);
    const auto inp = rounded(random_vector(N * C, 11, 1.0f), c.dtype);
    const auto weight = rounded(random_vector(static_cast<int64_t>(OC) * C, 12, 0.2f), c.dtype);
    const auto bias = rounded(random_vector(OC, 13, 1.0f), c.out_dtype);
    const auto init = rounded(random_vector(N * OC, 14, 1.0f), c.out_dtype);
    std::vector<float> want(N * OC);
    ref::matmul_forward(want.data(), inp.data(), weight.data(), nullptr, N, C, OC);
    for (int64_t i = 0; i < N * OC; ++i) want[i] += init[i];

    DeviceTensor d_inp(inp, c.dtype), d_weight(weight, c.dtype), d_bias(bias, c.out_dtype);
    DeviceTensor d_out(init, c.out_dtype);
    matmul_forward(ctx, d_out.ptr(), d_inp.ptr(), d_weight.ptr(), d_bias.ptr(), N, C, OC,
                   /*accumulate=*/true);
    ctx.synchronize("matmul_forward accumulate");
    // Relative to the size of the product (not of the sum): the added part must be right.
    expect_rel(d_out.download(), want, c.tol, "out (accumulate)", &init);
  }
}

void check_backward(const MatmulCase& c, int64_t N, int C, int OC, bool with_dinp,
                    bool with_dbias) {
  SCOPED_TRACE(case_name(c) + " N " + std::to_string(N) + " C " + std::to_string(C) + " OC " +
               std::to_string(OC) + (with_dinp ? "" : " no dinp") +
               (with_dbias ? "" : " no dbias"));
  CudaContext ctx(c.tf32);
  const auto dout = rounded(random_vector(N * OC, 21, 1.0f), c.dtype);
  const auto inp = rounded(random_vector(N * C, 22, 1.0f), c.dtype);
  const auto weight = rounded(random_vector(static_cast<int64_t>(OC) * C, 23, 0.2f), c.dtype);
  const auto dweight0 = random_vector(static_cast<int64_t>(OC) * C, 24, 1.0f);
  const auto dbias0 = random_vector(OC, 25, 1.0f);

  std::vector<float> want_dinp(N * C, 0.0f);  // the reference accumulates: start from zero
  std::vector<float> want_dweight = dweight0, want_dbias = dbias0;
  ref::matmul_backward(with_dinp ? want_dinp.data() : nullptr, want_dweight.data(),
                       with_dbias ? want_dbias.data() : nullptr, dout.data(), inp.data(),
                       weight.data(), N, C, OC);

  DeviceTensor d_dout(dout, c.dtype), d_inp(inp, c.dtype), d_weight(weight, c.dtype);
  DeviceTensor d_dinp = DeviceTensor::nan(N * C, c.dtype);                      // overwritten
  DeviceTensor d_dweight(dweight0, DType::kF32), d_dbias(dbias0, DType::kF32);  // accumulated
  matmul_backward(ctx, with_dinp ? d_dinp.ptr() : TypedPtr{}, d_dweight.ptr().f32(),
                  with_dbias ? d_dbias.ptr().f32() : nullptr, d_dout.ptr(), d_inp.ptr(),
                  d_weight.ptr(), N, C, OC);
  ctx.synchronize("matmul_backward");
  if (with_dinp) {
    expect_rel(d_dinp.download(), want_dinp, c.tol, "dinp");
  } else {
    for (float x : d_dinp.download()) ASSERT_TRUE(x != x) << "dinp written though null";
  }
  expect_rel(d_dweight.download(), want_dweight, c.tol, "dweight", &dweight0);
  if (with_dbias) {
    // A float32 sum of N values (the inputs are exact in the storage type): tight for every dtype.
    expect_rel(d_dbias.download(), want_dbias, 1e-5, "dbias", &dbias0);
  } else {
    EXPECT_EQ(d_dbias.download(), dbias0) << "dbias changed though null";
  }
}

TEST(CudaMatmul, Backward) {
  SKIP_WITHOUT_CUDA_DEVICE();
  for (const auto& c : kCases) {
    check_backward(c, 37, 97, 53, true, true);
    check_backward(c, 37, 97, 53, false, false);
    check_backward(c, 1000, 64, 96, true, true);  // several row chunks in the bias sum
    check_backward(c, 300, 64, 264, true, true);  // 16-byte column groups, a partial block
  }
}

// The bias gradient's column sums with 16-byte loads (aligned dout, OC a multiple of 8) and by
// element (dout one element off alignment) add in the same order: the same bits.
TEST(CudaMatmul, BiasGradientSameBitsWithAndWithoutVectorLoads) {
  SKIP_WITHOUT_CUDA_DEVICE();
  CudaContext ctx;
  const int64_t N = 1000;
  const int C = 64, OC = 96;
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const auto dout = rounded(random_vector(N * OC, 31, 1.0f), dtype);
    const auto inp = rounded(random_vector(N * C, 32, 1.0f), dtype);
    const auto weight = rounded(random_vector(int64_t{OC} * C, 33, 0.2f), dtype);
    std::vector<std::vector<float>> dbias;
    for (int64_t offset : {0, 1}) {
      DeviceTensor d_dout(dout, dtype, offset), d_inp(inp, dtype), d_weight(weight, dtype);
      DeviceTensor d_dbias(std::vector<float>(OC, 0.0f), DType::kF32);
      matmul_backward(ctx, TypedPtr{}, nullptr, d_dbias.ptr().f32(), d_dout.ptr(), d_inp.ptr(),
                      d_weight.ptr(), N, C, OC);
      dbias.push_back(d_dbias.download());
    }
    EXPECT_EQ(dbias[0], dbias[1]);
  }
}

// The MLP's GELU with its products: matmul_gelu_forward (pre = inp W^T + b, act = GELU(pre)) and
// matmul_gelu_backward (dinp = (dout W) * GELU'(pre)), fused into cuBLASLt's epilogues (bfloat16,
// tanh GELU) and not (float32, or fuse false, or the exact GELU / ReLU^2: the elementwise kernels),
// against the reference on the same rounded inputs. The fused epilogue applies the GELU to the
// float32 sum before rounding, so act is compared within bf16 tolerance of GELU(exact pre).
TEST(CudaMatmul, GeluInTheEpiloguesAndApart) {
  SKIP_WITHOUT_CUDA_DEVICE();
  CudaContext ctx(/*allow_tf32=*/false);
  const int64_t N = 300;
  const int C = 96, OC = 256;  // forward: C -> OC (the MLP's fc); backward: OC -> C, pre (N, OC)
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    for (MlpActivation kind :
         {MlpActivation::kTanh, MlpActivation::kExact, MlpActivation::kRelu2}) {
      for (bool fuse : {true, false}) {
        SCOPED_TRACE(std::string(dtype_name(dtype)) + " kind " + std::to_string(int(kind)) +
                     (fuse ? " fused" : " apart"));
        const double tol = dtype == DType::kF32 ? 1e-5 : 2e-2;
        const auto inp = rounded(random_vector(N * C, 41, 1.0f), dtype);
        const auto w = rounded(random_vector(int64_t{OC} * C, 42, 0.2f), dtype);
        const auto b = rounded(random_vector(OC, 43, 0.5f), dtype);
        std::vector<float> pre(N * OC), act(N * OC);
        ref::matmul_forward(pre.data(), inp.data(), w.data(), b.data(), N, C, OC);
        ref::gelu_forward(act.data(), pre.data(), N * OC, kind);
        DeviceTensor d_inp(inp, dtype), d_w(w, dtype), d_b(b, dtype);
        DeviceTensor d_pre = DeviceTensor::nan(N * OC, dtype),
                     d_act = DeviceTensor::nan(N * OC, dtype);
        matmul_gelu_forward(ctx, d_act.ptr(), d_pre.ptr(), d_inp.ptr(), d_w.ptr(), d_b.ptr(), N, C,
                            OC, kind, fuse);
        expect_rel(d_pre.download(), pre, tol, "pre");
        expect_rel(d_act.download(), act, tol, "act");

        // Backward of the next product (OC -> C): dinp (N, OC) = (dout (N, C) @ w2 (C, OC)) * act'.
        const auto pre_r = d_pre.download();  // what the backward reads, as the model keeps it
        const auto dout = rounded(random_vector(N * C, 44, 1.0f), dtype);
        const auto w2 = rounded(random_vector(int64_t{C} * OC, 45, 0.2f), dtype);
        const auto act_r = d_act.download();
        std::vector<float> dx(N * OC, 0.0f), want(N * OC, 0.0f), dw(int64_t{C} * OC, 0.0f);
        ref::matmul_backward(dx.data(), dw.data(), nullptr, dout.data(), act_r.data(), w2.data(), N,
                             OC, C);
        ref::gelu_backward(want.data(), pre_r.data(), dx.data(), N * OC, kind);
        DeviceTensor d_dout(dout, dtype), d_w2(w2, dtype), d_act_in(act_r, dtype);
        DeviceTensor d_dinp = DeviceTensor::nan(N * OC, dtype);
        DeviceTensor d_dw(std::vector<float>(int64_t{C} * OC, 0.0f), DType::kF32);
        matmul_gelu_backward(ctx, d_dinp.ptr(), d_dw.ptr().f32(), nullptr, d_dout.ptr(),
                             d_act_in.ptr(), d_w2.ptr(), N, OC, C, d_pre.ptr(), kind, fuse);
        ctx.synchronize("matmul_gelu_backward");
        expect_rel(d_dinp.download(), want, tol, "dinp");
        expect_rel(d_dw.download(), dw, tol, "dweight");
      }
    }
  }
}

TEST(CudaMatmul, RefusesMixedDtypes) {
  SKIP_WITHOUT_CUDA_DEVICE();
  CudaContext ctx;
  DeviceTensor a(random_vector(16, 1, 1.0f), DType::kF32),
      b(random_vector(16, 2, 1.0f), DType::kBF16);
  DeviceTensor out = DeviceTensor::nan(16, DType::kBF16);
  // float32 inputs, bfloat16 weight.
  EXPECT_THROW(matmul_forward(ctx, out.ptr(), a.ptr(), b.ptr(), {}, 4, 4, 4), Error);
  // float32 inputs into a bfloat16 output.
  EXPECT_THROW(matmul_forward(ctx, out.ptr(), a.ptr(), a.ptr(), {}, 4, 4, 4), Error);
}

}  // namespace
}  // namespace nanogpt::cuda
