// cuda::encoder_forward / encoder_backward (encoder.cu) against the scalar reference: with and
// without the position embedding, odd sizes and GPT-2's width, tokens repeated within and across
// rows (one token on ~30% of the positions: runs longer than a block), dwte / dwpe accumulated,
// bit-identical on a second run (deterministic). Skipped without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/rng.h"
#include "cuda_test_util.h"
#include "kernels/cuda/ops_cuda.h"
#include "kernels/ops.h"

namespace nanogpt::cuda {
namespace {

using testing_cuda::CudaTest;
using testing_cuda::DeviceTensor;
using testing_cuda::expect_close;
using testing_cuda::random_normal;

using CudaEncoder = CudaTest;

// Token ids in [0, V): token 7 % V on ~30% of the positions, the others uniform.
std::vector<int> random_tokens(int64_t n, int V, uint64_t seed) {
  Rng rng(seed);
  std::vector<int> t(n);
  for (auto& x : t) x = rng.uniform() < 0.3f ? 7 % V : static_cast<int>(rng.uniform_int(V));
  return t;
}

void check(int B, int T, int C, int V, bool with_wpe, CudaContext& ctx) {
  SCOPED_TRACE("B " + std::to_string(B) + " T " + std::to_string(T) + " C " + std::to_string(C) +
               " V " + std::to_string(V) + (with_wpe ? "" : " no wpe"));
  const int64_t BT = int64_t{B} * T;
  const auto tokens = random_tokens(BT, V, 61);
  const auto wte = random_normal(size_t(V) * C, 62), wpe = random_normal(size_t(T) * C, 63);
  std::vector<float> want(BT * C);
  ref::encoder_forward(want.data(), tokens.data(), wte.data(), with_wpe ? wpe.data() : nullptr, B,
                       T, C);
  auto d_tokens = testing_cuda::to_device(tokens, "tokens");
  DeviceTensor d_wte(wte, DType::kF32), d_wpe(wpe, DType::kF32);
  DeviceTensor d_out = DeviceTensor::nan(BT * C, DType::kF32);
  encoder_forward(d_out.ptr().f32(), d_tokens.data(), d_wte.ptr().f32(),
                  with_wpe ? d_wpe.ptr().f32() : nullptr, B, T, C);
  EXPECT_EQ(d_out.download(), want) << "forward";

  const auto dout = random_normal(BT * C, 64);
  const auto dwte0 = random_normal(size_t(V) * C, 65), dwpe0 = random_normal(size_t(T) * C, 66);
  auto want_dwte = dwte0, want_dwpe = dwpe0;
  ref::encoder_backward(want_dwte.data(), with_wpe ? want_dwpe.data() : nullptr, dout.data(),
                        tokens.data(), B, T, C);
  DeviceTensor d_dout(dout, DType::kF32);
  std::vector<float> first_dwte, first_dwpe;
  for (int run = 0; run < 2; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    DeviceTensor d_dwte(dwte0, DType::kF32), d_dwpe(dwpe0, DType::kF32);
    encoder_backward(ctx, d_dwte.ptr().f32(), with_wpe ? d_dwpe.ptr().f32() : nullptr,
                     d_dout.ptr().f32(), d_tokens.data(), B, T, C);
    ctx.synchronize("encoder_backward");
    const auto got_dwte = d_dwte.download(), got_dwpe = d_dwpe.download();
    // Float sums of up to ~0.3 B T values of |x| ~ 1 (the run of token 7), in another order than
    // the reference's: errors ~ sqrt(count) eps.
    expect_close(got_dwte, want_dwte, 1e-5 * std::sqrt(double(BT)), 1e-5, "dwte");
    if (with_wpe) {
      expect_close(got_dwpe, want_dwpe, 1e-5 * std::sqrt(double(B)), 1e-5, "dwpe");
    } else {
      EXPECT_EQ(got_dwpe, dwpe0) << "dwpe written though null";
    }
    if (run == 0) {
      first_dwte = got_dwte;
      first_dwpe = got_dwpe;
    } else {
      EXPECT_EQ(got_dwte, first_dwte) << "dwte not deterministic";
      EXPECT_EQ(got_dwpe, first_dwpe) << "dwpe not deterministic";
    }
  }
}

TEST_F(CudaEncoder, SmallOddSizes) {
  check(3, 37, 97, 50, true, ctx());
  check(3, 37, 97, 50, false, ctx());
  check(1, 1, 5, 3, true, ctx());
}

TEST_F(CudaEncoder, Gpt2Width) {
  check(4, 1024, 768, 5000, true, ctx());  // runs of ~1200 positions of token 7
  check(2, 64, 1600, 50304, false, ctx());
}

}  // namespace
}  // namespace nanogpt::cuda
