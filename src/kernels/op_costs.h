// What each Backend op (kernels/backend.h) costs, for the --profile table (kernels/op_profile.h):
// its class, the FLOPs it does and the bytes it moves at least, from its arguments alone, so that
// every backend charges its ops the same (the CPU's kernels/cpu/cpu_backend_ops.cpp, the GPU's
// kernels/cuda/cuda_backend.cu). Dtype arguments are the tensors' storage (float32 by default, the
// float32 forms of the ops). No CUDA here: the .cu files include it (C++17).
#pragma once

#include <cstdint>

#include "kernels/dtype.h"
#include "kernels/op_profile.h"

namespace nanogpt::op_cost {

struct OpCost {
  OpClass c;
  double flops;
  double bytes;
};

inline double size_of(DType t) { return static_cast<double>(dtype_size(t)); }

inline OpCost encoder_forward(int B, int T, int C) {
  return {OpClass::kElementwise, 0, 4.0 * B * T * C * 3};
}
inline OpCost encoder_backward(int B, int T, int C) {
  return {OpClass::kElementwise, 0, 4.0 * B * T * C * 5};
}
inline OpCost layernorm_forward(int64_t N, int C, DType out = DType::kF32) {
  return {OpClass::kNorm, 8.0 * N * C, double(N) * C * (4 + size_of(out))};
}
inline OpCost residual_layernorm_forward(int64_t N, int C, DType out = DType::kF32) {
  return {OpClass::kNorm, 9.0 * N * C, double(N) * C * (12 + size_of(out))};
}
inline OpCost layernorm_backward(int64_t N, int C, DType dout = DType::kF32) {
  return {OpClass::kNorm, 14.0 * N * C, double(N) * C * (12 + size_of(dout))};
}
inline OpCost matmul_forward(int64_t N, int C, int OC, DType in = DType::kF32,
                             DType out = DType::kF32) {
  return {OpClass::kMatmul, 2.0 * N * C * OC,
          size_of(in) * (N * C + double(C) * OC) + size_of(out) * N * OC};
}
// with_dinp: the input's gradient too (two products), else the weight's alone.
inline OpCost matmul_backward(int64_t N, int C, int OC, bool with_dinp, DType dout = DType::kF32) {
  const double products = with_dinp ? 2 : 1;
  return {OpClass::kMatmul, products * 2.0 * N * C * OC,
          size_of(dout) * (N * OC + (products + 1) * (N * C + double(C) * OC))};
}
inline OpCost matmul_backward_overwrite(int64_t N, int C, int OC, DType dout) {
  return {OpClass::kMatmul, 4.0 * N * C * OC,
          size_of(dout) * (N * OC + 2 * (N * C + double(C) * OC))};
}
inline OpCost matmul_gelu_forward(int64_t N, int C, int OC, DType in, DType fch) {
  return {OpClass::kMatmul, 2.0 * N * C * OC,
          size_of(in) * (N * C + double(C) * OC) + 2.0 * size_of(fch) * N * OC};
}
inline OpCost gelu_matmul_backward(int64_t N, int C, int OC, DType pre) {
  return {OpClass::kMatmul, 4.0 * N * C * OC,
          size_of(pre) * (N * OC + 2.0 * N * C + 2.0 * double(C) * OC)};
}
inline OpCost attention_forward(int B, int T, int C, DType qkv = DType::kF32) {
  return {OpClass::kAttention, 2.0 * B * T * double(T) * C, size_of(qkv) * B * T * C * 4};
}
inline OpCost attention_backward(int B, int T, int C, DType qkv = DType::kF32) {
  return {OpClass::kAttention, 4.0 * B * T * double(T) * C, size_of(qkv) * B * T * C * 8};
}
inline OpCost attention_naive_forward(int B, int T, int C, int NH) {
  return {OpClass::kAttention, 4.0 * B * T * double(T) * C,
          4.0 * (B * T * C * 4.0 + 2.0 * B * NH * double(T) * T)};
}
inline OpCost attention_naive_backward(int B, int T, int C, int NH) {
  return {OpClass::kAttention, 8.0 * B * T * double(T) * C,
          4.0 * (B * T * C * 8.0 + double(B) * NH * T * T)};
}
inline OpCost attention_decode(int t, int C) {
  return {OpClass::kAttention, 4.0 * t * C, 4.0 * 2 * t * C};
}
inline OpCost gelu_forward(int64_t N, DType inp = DType::kF32) {
  return {OpClass::kElementwise, 0, size_of(inp) * N * 2};
}
inline OpCost gelu_backward(int64_t N, DType inp = DType::kF32) {
  return {OpClass::kElementwise, 0, size_of(inp) * N * 4};
}
inline OpCost gelu_backward_overwrite(int64_t N, DType inp) {
  return {OpClass::kElementwise, 0, size_of(inp) * N * 3};
}
inline OpCost residual_forward(int64_t N) { return {OpClass::kElementwise, 0, 4.0 * N * 3}; }
inline OpCost skip_forward(int64_t N) { return {OpClass::kElementwise, 2.0 * N, 4.0 * N * 3}; }
inline OpCost skip_backward(int64_t N) { return {OpClass::kElementwise, 3.0 * N, 4.0 * N * 3}; }
inline OpCost dropout_forward(int64_t N) { return {OpClass::kElementwise, 0, 4.0 * N * 2}; }
inline OpCost dropout_backward(int64_t N) { return {OpClass::kElementwise, 0, 4.0 * N * 3}; }
inline OpCost dropout_backward_overwrite(int64_t N) {
  return {OpClass::kElementwise, 0, 4.0 * N * 2};
}
inline OpCost crossentropy_forward(int64_t N, int Vp) {
  return {OpClass::kClassifier, 0, 4.0 * N * Vp};
}
inline OpCost crossentropy_forward_backward(int64_t N, int Vp) {
  return {OpClass::kClassifier, 0, 4.0 * N * Vp * 2};
}
inline OpCost qk_norm_rotary_forward(int64_t N, int C, DType qkv) {
  return {OpClass::kAttention, 6.0 * N * 2 * C, 2.0 * size_of(qkv) * N * 2 * C};
}
// with_norm: QK-norm's statistics are read too (rstd not null).
inline OpCost qk_norm_rotary_backward(int64_t N, int C, DType dqkv, bool with_norm) {
  return {OpClass::kAttention, 8.0 * N * 2 * C,
          (with_norm ? 3.0 : 2.0) * size_of(dqkv) * N * 2 * C};
}
inline OpCost softcap_forward(int64_t N) { return {OpClass::kClassifier, 0, 4.0 * N * 2}; }
inline OpCost crossentropy_softcap_forward_backward(int64_t N, int Vp) {
  return {OpClass::kClassifier, 0, 4.0 * N * Vp * 2};
}
inline OpCost fill_zero(int64_t n, DType dst) {
  return {OpClass::kElementwise, 0, double(n) * size_of(dst)};
}
inline OpCost convert(int64_t n, DType dst, DType src) {
  return {OpClass::kElementwise, 0, double(n) * (size_of(dst) + size_of(src))};
}

}  // namespace nanogpt::op_cost
