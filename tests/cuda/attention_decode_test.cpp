// attention_decode on the GPU (sampling with the KV cache) against the scalar reference, float32
// and bfloat16 storage, one key and many.
#include <gtest/gtest.h>

#include <vector>

#include "cuda_test_util.h"
#include "kernels/cuda/ops_cuda.h"
#include "kernels/ops.h"

namespace nanogpt::cuda {
namespace {

using testing_cuda::DeviceTensor;
using testing_cuda::random_vector;
using testing_cuda::relative_error;
using testing_cuda::rounded;

void check_decode(DType dtype, int t, int maxT, int C, int NH, double tol) {
  SCOPED_TRACE(std::string(dtype_name(dtype)) + " t " + std::to_string(t));
  const auto q = rounded(random_vector(C, 1), dtype);
  const auto k = rounded(random_vector(int64_t{maxT} * C, 2), dtype);
  const auto v = rounded(random_vector(int64_t{maxT} * C, 3), dtype);
  std::vector<float> want(C);
  ref::attention_decode(want.data(), q.data(), k.data(), v.data(), t, C, NH);
  CudaContext ctx;
  DeviceTensor dq(q, dtype), dk(k, dtype), dv(v, dtype);
  DeviceTensor out = DeviceTensor::nan(C, dtype);
  attention_decode(ctx, out.ptr(), dq.ptr(), dk.ptr(), dv.ptr(), t, C, NH);
  ctx.synchronize("attention_decode");
  EXPECT_LT(relative_error(out.download(), want), tol);
}

TEST(CudaAttentionDecode, MatchesReference) {
  SKIP_WITHOUT_CUDA_DEVICE();
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    const double tol = dtype == DType::kF32 ? 1e-5 : 2e-2;
    check_decode(dtype, 1, 8, 96, 3, tol);
    check_decode(dtype, 37, 50, 96, 3, tol);
    check_decode(dtype, 700, 1024, 768, 12, tol);
  }
}

}  // namespace
}  // namespace nanogpt::cuda
