// The error model of the bfloat16 attention kernels that round P and dS before their products
// (kernels/cpu/attention_bf16 and kernels/cpu/attention_onednn), as componentwise tolerances
// against the float32 reference on the same bf16 inputs, the check of a kernel against it, and
// bf16 <-> float vector helpers.
//
// Error model (u = 2^-8, bf16's unit roundoff). The kernels round exactly two kinds of values to
// bf16 before a product: the probabilities P (for O = P V and dV = P^T dO) and dS (for dK, dQ);
// scores, the softmax statistics, D_t and every sum stay float32. So, beyond float32 noise:
//   out_t  within u sum_s P M |v_s| + u |out_t|        (rounded P, then the rounded output)
//   dV_s   within u sum_t P M |dO_t| + u |dV_s|        (rounded P, then round(old + dV))
//   dK_s   within u scale sum_t |dS_ts| |q_t| + u |.|  (rounded dS)
//   dQ_t   within u scale sum_s |dS_ts| |k_s| + u |.|
// (componentwise, computed in double below), plus 1e-4 of the same magnitudes for the float32
// arithmetic (exp approximation, summation order), far below u. And one error that is not the
// kernel's: like the float32 flash kernel it takes D_t = dout_t . out_t from the out it is given,
// which the model stores in bf16, while the reference sums P dP exactly; dS_ts = P (dP M - D_t)
// then carries P |dD_t|, with dD_t = sum |dout_t| |out_bf16 - out| (computed below), into dK, dQ.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/float16.h"
#include "core/rng.h"
#include "kernel_test_util.h"
#include "kernels/ops.h"

namespace nanogpt::testing {

inline constexpr double kBf16U = kUnitRoundoffBf16;

inline std::vector<uint16_t> to_bf16(const std::vector<float>& v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = float_to_bf16(v[i]);
  return out;
}
inline std::vector<float> to_float(const std::vector<uint16_t>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = bf16_to_float(v[i]);
  return out;
}

struct Bf16Tolerance {
  std::vector<double> out, dqkv;
};

// The bounds of the header comment, from the widened inputs and the reference's out and lse.
inline Bf16Tolerance bf16_tolerance(const std::vector<float>& qkv, const std::vector<float>& dout,
                                    const std::vector<float>& out_r,
                                    const std::vector<float>& out_in, const std::vector<float>& lse,
                                    const std::vector<float>& dqkv_r, int B, int T, int C, int NH,
                                    float p, uint64_t seed) {
  const int HS = C / NH;
  const double scale = 1.0 / std::sqrt(double(HS)), ks = p > 0 ? 1.0 / (1.0 - p) : 1.0;
  const double slack = 1e-4;
  Bf16Tolerance tol{std::vector<double>(out_r.size(), 0.0), std::vector<double>(qkv.size(), 0.0)};
  auto at = [&](int b, int t, int part, int h) {
    return qkv.data() + (size_t(b) * T + t) * 3 * C + part * C + h * HS;
  };
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < NH; ++h) {
      for (int t = 0; t < T; ++t) {
        const double l = lse[(size_t(b) * NH + h) * T + t];
        const float* dO = dout.data() + (size_t(b) * T + t) * C + h * HS;
        const float* o = out_in.data() + (size_t(b) * T + t) * C + h * HS;
        const float* o_exact = out_r.data() + (size_t(b) * T + t) * C + h * HS;
        double D = 0, dD = 0;
        for (int x = 0; x < HS; ++x) {
          D += double(dO[x]) * o[x];
          dD += std::fabs(double(dO[x]) * (double(o[x]) - o_exact[x]));
        }
        for (int s = 0; s <= t; ++s) {
          double sc = 0, dp = 0;
          for (int x = 0; x < HS; ++x) {
            sc += double(at(b, t, 0, h)[x]) * at(b, s, 1, h)[x];
            dp += double(dO[x]) * at(b, s, 2, h)[x];
          }
          const double P = std::exp(sc * scale - l);
          const uint64_t idx = ((uint64_t(b) * NH + h) * T + t) * T + s;
          const double M = p == 0 ? 1.0 : (hash_uniform(seed, idx) >= p ? ks : 0.0);
          const double dS = P * std::fabs(dp * M - D), eD = 1.01 * scale * P * dD;
          for (int x = 0; x < HS; ++x) {
            tol.out[(size_t(b) * T + t) * C + h * HS + x] +=
                (kBf16U + slack) * P * M * std::fabs(at(b, s, 2, h)[x]);
            const size_t iq = (size_t(b) * T + t) * 3 * C + h * HS + x;
            const size_t ik = (size_t(b) * T + s) * 3 * C + C + h * HS + x;
            tol.dqkv[iq] += ((kBf16U + slack) * scale * dS + eD) * std::fabs(at(b, s, 1, h)[x]);
            tol.dqkv[ik] += ((kBf16U + slack) * scale * dS + eD) * std::fabs(at(b, t, 0, h)[x]);
            tol.dqkv[ik + C] += (kBf16U + slack) * P * M * std::fabs(dO[x]);
          }
        }
      }
    }
  }
  for (size_t i = 0; i < out_r.size(); ++i) tol.out[i] += kBf16U * std::fabs(out_r[i]) + 1e-30;
  for (size_t i = 0; i < qkv.size(); ++i) tol.dqkv[i] += kBf16U * std::fabs(dqkv_r[i]) + 1e-30;
  return tol;
}

// Runs a bf16 attention kernel, forward(out, lse, qkv, seed) and the accumulating
// backward(dqkv, dout, out, lse, qkv, seed) (bf16 bits; shape B, T, C, NH and dropout p bound by
// the caller), against ref:: on the same bf16 inputs: out, lse and dqkv within the error model
// above. The backward starts from the reference's out (rounded to bf16, as the model stores it)
// and lse, accumulating into nonzero bf16 gradients.
template <class Forward, class Backward>
void expect_bf16_attention_within_error_model(Forward forward, Backward backward, int B, int T,
                                              int C, int NH, float p) {
  const uint64_t seed = 99;
  const auto qkv16 = to_bf16(random_normal(size_t(B) * T * 3 * C, 1));
  const auto dout16 = to_bf16(random_normal(size_t(B) * T * C, 2));
  const auto qkv = to_float(qkv16), dout = to_float(dout16);
  std::vector<uint16_t> out16(size_t(B) * T * C);
  std::vector<float> lse(size_t(B) * NH * T), out_r(out16.size()), lse_r(lse.size());
  forward(out16.data(), lse.data(), qkv16.data(), seed);
  ref::attention_forward(out_r.data(), lse_r.data(), qkv.data(), B, T, C, NH, p, seed);
  const auto out_in16 = to_bf16(out_r);
  const auto out_in = to_float(out_in16);
  auto dqkv16 = to_bf16(random_normal(qkv.size(), 3));
  auto dqkv_r = to_float(dqkv16);
  backward(dqkv16.data(), dout16.data(), out_in16.data(), lse_r.data(), qkv16.data(), seed);
  ref::attention_backward(dqkv_r.data(), dout.data(), out_in.data(), lse_r.data(), qkv.data(), B, T,
                          C, NH, p, seed);
  const auto tol = bf16_tolerance(qkv, dout, out_r, out_in, lse_r, dqkv_r, B, T, C, NH, p, seed);
  expect_within(to_float(out16), out_r, tol.out, "out");
  std::vector<double> lse_tol(lse.size());
  for (size_t i = 0; i < lse.size(); ++i) lse_tol[i] = 1e-5 * (1 + std::fabs(lse_r[i]));
  expect_within(lse, lse_r, lse_tol, "lse (float32 scores of the bf16 inputs)");
  expect_within(to_float(dqkv16), dqkv_r, tol.dqkv, "dqkv");
}

}  // namespace nanogpt::testing
