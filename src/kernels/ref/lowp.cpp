// Reference low-precision ops (ops_lowp.h): the definition of each mixed-precision op. Inputs are
// widened to float (exact), the float32 reference op runs, and each output is rounded once to its
// dtype with core/float16.h's scalar conversions (accumulating outputs: round(old + update)).
#include <algorithm>
#include <vector>

#include "core/float16.h"
#include "core/rng.h"
#include "kernels/ops_lowp.h"

namespace nanogpt::ref {

namespace {

float load(ConstTypedPtr p, int64_t i) {
  switch (p.dtype) {
    case DType::kF32: return static_cast<const float*>(p.data)[i];
    case DType::kBF16: return bf16_to_float(static_cast<const uint16_t*>(p.data)[i]);
    case DType::kF16: return fp16_to_float(static_cast<const uint16_t*>(p.data)[i]);
  }
  return 0;
}

void store(TypedPtr p, int64_t i, float v) {
  switch (p.dtype) {
    case DType::kF32: static_cast<float*>(p.data)[i] = v; return;
    case DType::kBF16: static_cast<uint16_t*>(p.data)[i] = float_to_bf16(v); return;
    case DType::kF16: static_cast<uint16_t*>(p.data)[i] = float_to_fp16(v); return;
  }
}

std::vector<float> widened(ConstTypedPtr p, int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = load(p, i);
  return v;
}

void store_all(TypedPtr p, const std::vector<float>& v) {
  for (size_t i = 0; i < v.size(); ++i) store(p, static_cast<int64_t>(i), v[i]);
}

}  // namespace

void convert(TypedPtr dst, ConstTypedPtr src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) store(dst, i, load(src, i));
}

void fill_zero(TypedPtr dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) store(dst, i, 0.0f);
}

void layernorm_forward(TypedPtr out, float* mean, float* rstd, const float* inp,
                       const float* weight, const float* bias, int64_t N, int C, NormKind norm) {
  std::vector<float> o(static_cast<size_t>(N * C));
  layernorm_forward(o.data(), mean, rstd, inp, weight, bias, N, C, norm);
  store_all(out, o);
}

void layernorm_backward(float* dinp, float* dweight, float* dbias, ConstTypedPtr dout,
                        const float* inp, const float* weight, const float* mean, const float* rstd,
                        int64_t N, int C, NormKind norm) {
  const auto d = widened(dout, N * C);
  layernorm_backward(dinp, dweight, dbias, d.data(), inp, weight, mean, rstd, N, C, norm);
}

void gelu_forward(TypedPtr out, ConstTypedPtr inp, int64_t N, MlpActivation kind) {
  const auto x = widened(inp, N);
  std::vector<float> y(static_cast<size_t>(N));
  gelu_forward(y.data(), x.data(), N, kind);
  store_all(out, y);
}

void gelu_backward(TypedPtr dinp, ConstTypedPtr inp, ConstTypedPtr dout, int64_t N,
                   MlpActivation kind) {
  const auto x = widened(inp, N), d = widened(dout, N);
  auto g = widened(dinp, N);
  gelu_backward(g.data(), x.data(), d.data(), N, kind);
  store_all(dinp, g);
}

void attention_forward(TypedPtr out, float* lse, ConstTypedPtr qkv, int B, int T, int C, int NH,
                       float dropout_p, uint64_t seed) {
  if (out.f32() && qkv.f32()) {
    return attention_forward(out.f32(), lse, qkv.f32(), B, T, C, NH, dropout_p, seed);
  }
  const int G = attention_batch_group(B, NH);
  for (int b0 = 0; b0 < B; b0 += G) {
    const int g = std::min(G, B - b0);
    const int64_t rows = static_cast<int64_t>(g) * T, r0 = static_cast<int64_t>(b0) * T;
    const auto q = widened(qkv.at(r0 * 3 * C), rows * 3 * C);
    std::vector<float> o(static_cast<size_t>(rows * C));
    attention_forward(o.data(), lse + static_cast<int64_t>(b0) * NH * T, q.data(), g, T, C, NH,
                      dropout_p, splitmix64(seed + static_cast<uint64_t>(b0)));
    store_all(out.at(r0 * C), o);
  }
}

void attention_backward(TypedPtr dqkv, ConstTypedPtr dout, ConstTypedPtr out, const float* lse,
                        ConstTypedPtr qkv, int B, int T, int C, int NH, float dropout_p,
                        uint64_t seed) {
  if (dqkv.f32() && dout.f32() && out.f32() && qkv.f32()) {
    return attention_backward(dqkv.f32(), dout.f32(), out.f32(), lse, qkv.f32(), B, T, C, NH,
                              dropout_p, seed);
  }
  const int G = attention_batch_group(B, NH);
  for (int b0 = 0; b0 < B; b0 += G) {
    const int g = std::min(G, B - b0);
    const int64_t rows = static_cast<int64_t>(g) * T, r0 = static_cast<int64_t>(b0) * T;
    const auto q = widened(qkv.at(r0 * 3 * C), rows * 3 * C);
    const auto o = widened(out.at(r0 * C), rows * C);
    const auto d = widened(dout.at(r0 * C), rows * C);
    auto dq = widened(dqkv.at(r0 * 3 * C), rows * 3 * C);
    std::vector<float> delta(dq.size(), 0.0f);
    attention_backward(delta.data(), d.data(), o.data(), lse + static_cast<int64_t>(b0) * NH * T,
                       q.data(), g, T, C, NH, dropout_p,
                       splitmix64(seed + static_cast<uint64_t>(b0)));
    for (size_t i = 0; i < dq.size(); ++i) dq[i] += delta[i];
    store_all(dqkv.at(r0 * 3 * C), dq);
  }
}

void matmul_forward(TypedPtr out, ConstTypedPtr inp, ConstTypedPtr weight, const float* bias,
                    int64_t N, int C, int OC) {
  const auto x = widened(inp, N * C), w = widened(weight, static_cast<int64_t>(OC) * C);
  std::vector<float> o(static_cast<size_t>(N * OC));
  matmul_forward(o.data(), x.data(), w.data(), bias, N, C, OC);
  store_all(out, o);
}

void matmul_backward(TypedPtr dinp, float* dweight, float* dbias, ConstTypedPtr dout,
                     ConstTypedPtr inp, ConstTypedPtr weight, int64_t N, int C, int OC) {
  const auto d = widened(dout, N * OC), x = widened(inp, N * C),
             w = widened(weight, static_cast<int64_t>(OC) * C);
  std::vector<float> delta;
  if (dinp) delta.assign(static_cast<size_t>(N * C), 0.0f);
  matmul_backward(dinp ? delta.data() : nullptr, dweight, dbias, d.data(), x.data(), w.data(), N, C,
                  OC);
  if (dinp) {
    auto di = widened(dinp, N * C);
    for (size_t i = 0; i < di.size(); ++i) di[i] += delta[i];
    store_all(dinp, di);
  }
}

}  // namespace nanogpt::ref
