// Causal attention for any head size up to 256, float32 or bfloat16 storage (ops_cuda.h:
// attention_any_head_forward / _backward): the op of the flash kernels (out and lse forward; the
// backward recomputes the probabilities from lse, with dropout's masks drawn by index as on the
// CPU, attention_dropout_mult), for the shapes the tensor-core kernels (bfloat16 heads of 64) do
// not take, e.g. the CPU speedrun recipe's heads of 32. One warp per row, lanes splitting the head
// (HS / 32 elements each, in registers), float32 arithmetic, online softmax; no atomics: the
// backward's dq is a warp per query row and dk, dv a warp per key row, each written once, so the
// results are deterministic. O(T^2 HS) reads per head from L2: a small model's path, not GPT-2's.
//
// Row r = (b*NH + h)*T + t; Q, K, V of (b, t, h) at qkv (B,T,3C) + (b*T + t)*3C + {0, C, 2C} +
// h*HS; out, dout (B,T,C) at (b*T + t)*C + h*HS; lse, delta (B,NH,T) at r; dropout index r*T + s.
#include <cmath>
#include <cstdint>

#include "kernels/cuda/cuda_util.cuh"
#include "kernels/cuda/ops_cuda.h"
#include "kernels/cuda/reduce.cuh"
#include "kernels/ops_lowp.h"

namespace nanogpt::cuda {

namespace {

constexpr int kMaxHeadSize = 256;
constexpr int kPerLane = kMaxHeadSize / kWarpSize;  // head elements a lane holds
constexpr int kRowsPerBlock = 4;                    // warps per block, one row each
constexpr int kThreads = kRowsPerBlock * kWarpSize;

struct Shape {
  int B, T, NH, HS;
  float scale;  // 1 / sqrt(HS)
  __host__ __device__ int64_t C() const { return int64_t{NH} * HS; }
  __host__ __device__ int64_t rows() const { return int64_t{B} * NH * T; }
  // dropout elements per sequence
  __host__ __device__ int64_t per_b() const { return int64_t{NH} * T * T; }
};

struct Row {
  int b, h, t;
  int64_t r;
};

__device__ __forceinline__ Row row_of(const Shape& s, int64_t r) {
  Row w;
  w.r = r;
  w.t = static_cast<int>(r % s.T);
  const int64_t bh = r / s.T;
  w.h = static_cast<int>(bh % s.NH);
  w.b = static_cast<int>(bh / s.NH);
  return w;
}

// This thread's lane and the row its warp owns (one warp a row, kRowsPerBlock rows a block);
// false past the last row.
__device__ __forceinline__ bool warp_row(const Shape& s, int& lane, int64_t& r) {
  lane = static_cast<int>(threadIdx.x % kWarpSize);
  r = blockIdx.x * int64_t{kRowsPerBlock} + threadIdx.x / kWarpSize;
  return r < s.rows();
}

// Offset of head h of position t of sequence b in qkv's part `part` (0 q, 1 k, 2 v).
__device__ __forceinline__ int64_t qkv_at(const Shape& s, int b, int t, int h, int part) {
  return (int64_t{b} * s.T + t) * 3 * s.C() + part * s.C() + int64_t{h} * s.HS;
}
__device__ __forceinline__ int64_t out_at(const Shape& s, int b, int t, int h) {
  return (int64_t{b} * s.T + t) * s.C() + int64_t{h} * s.HS;
}

template <typename T>
__device__ __forceinline__ void load(float (&x)[kPerLane], const T* p, int HS, int lane) {
#pragma unroll
  for (int j = 0; j < kPerLane; ++j) {
    const int i = lane + j * kWarpSize;
    x[j] = i < HS ? to_f32(p[i]) : 0.0f;
  }
}
template <typename T>
__device__ __forceinline__ float dot(const float (&x)[kPerLane], const T* p, int HS, int lane) {
  float d = 0;
#pragma unroll
  for (int j = 0; j < kPerLane; ++j) {
    const int i = lane + j * kWarpSize;
    if (i < HS) d += x[j] * to_f32(p[i]);
  }
  return warp_sum(d);
}
template <typename T>
__device__ __forceinline__ void store(T* p, const float (&x)[kPerLane], float mult, int HS,
                                      int lane) {
#pragma unroll
  for (int j = 0; j < kPerLane; ++j) {
    const int i = lane + j * kWarpSize;
    if (i < HS) p[i] = from_f32<T>(x[j] * mult);
  }
}

__device__ __forceinline__ float mask(const Shape& s, float p, uint64_t seed, int group, int64_t r,
                                      int key) {
  return p > 0 ? attention_dropout_mult(seed, group, s.per_b(), r * s.T + key, p) : 1.0f;
}

template <typename T>
__global__ void forward_kernel(T* out, float* lse, const T* qkv, Shape s, float p, uint64_t seed,
                               int group) {
  int lane;
  int64_t r;
  if (!warp_row(s, lane, r)) return;
  const Row w = row_of(s, r);
  float q[kPerLane], acc[kPerLane];
  load(q, qkv + qkv_at(s, w.b, w.t, w.h, 0), s.HS, lane);
#pragma unroll
  for (int j = 0; j < kPerLane; ++j) acc[j] = 0;
  float m = -INFINITY, l = 0;
  for (int key = 0; key <= w.t; ++key) {
    const float score = dot(q, qkv + qkv_at(s, w.b, key, w.h, 1), s.HS, lane) * s.scale;
    const float m_new = fmaxf(m, score);
    const float corr = expf(m - m_new);  // 0 at the first key (m = -inf)
    const float e = expf(score - m_new);
    l = l * corr + e;
    const float weight = e * mask(s, p, seed, group, r, key);
    const T* v = qkv + qkv_at(s, w.b, key, w.h, 2);
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) {
      const int i = lane + j * kWarpSize;
      acc[j] = acc[j] * corr + (i < s.HS ? weight * to_f32(v[i]) : 0.0f);
    }
    m = m_new;
  }
  store(out + out_at(s, w.b, w.t, w.h), acc, 1.0f / l, s.HS, lane);
  if (lane == 0) lse[r] = m + logf(l);
}

// delta[r] = dout_r . out_r (= sum_s P_s dP_s, the softmax backward's row term).
template <typename T>
__global__ void delta_kernel(float* delta, const T* dout, const T* out, Shape s) {
  int lane;
  int64_t r;
  if (!warp_row(s, lane, r)) return;
  const Row w = row_of(s, r);
  float d[kPerLane];
  load(d, dout + out_at(s, w.b, w.t, w.h), s.HS, lane);
  const float x = dot(d, out + out_at(s, w.b, w.t, w.h), s.HS, lane);
  if (lane == 0) delta[r] = x;
}

// dq of query row r: scale * sum_{s<=t} P_s (M_s (dout . v_s) - delta) k_s.
template <typename T>
__global__ void dq_kernel(T* dqkv, const T* dout, const float* lse, const float* delta,
                          const T* qkv, Shape s, float p, uint64_t seed, int group) {
  int lane;
  int64_t r;
  if (!warp_row(s, lane, r)) return;
  const Row w = row_of(s, r);
  float q[kPerLane], d[kPerLane], dq[kPerLane];
  load(q, qkv + qkv_at(s, w.b, w.t, w.h, 0), s.HS, lane);
  load(d, dout + out_at(s, w.b, w.t, w.h), s.HS, lane);
#pragma unroll
  for (int j = 0; j < kPerLane; ++j) dq[j] = 0;
  const float l = lse[r], D = delta[r];
  for (int key = 0; key <= w.t; ++key) {
    const T* k = qkv + qkv_at(s, w.b, key, w.h, 1);
    const float P = expf(dot(q, k, s.HS, lane) * s.scale - l);
    const float dp = mask(s, p, seed, group, r, key) * dot(d, k + s.C(), s.HS, lane);
    const float ds = P * (dp - D) * s.scale;
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) {
      const int i = lane + j * kWarpSize;
      if (i < s.HS) dq[j] += ds * to_f32(k[i]);
    }
  }
  store(dqkv + qkv_at(s, w.b, w.t, w.h, 0), dq, 1.0f, s.HS, lane);
}

// dk, dv of key row (b, h, key): over the queries t >= key, dv += P M dout_t, dk += ds q_t.
template <typename T>
__global__ void dkv_kernel(T* dqkv, const T* dout, const float* lse, const float* delta,
                           const T* qkv, Shape s, float p, uint64_t seed, int group) {
  int lane;
  int64_t kr;
  if (!warp_row(s, lane, kr)) return;
  const Row w = row_of(s, kr);  // w.t is the key's position
  float k[kPerLane], v[kPerLane], dk[kPerLane], dv[kPerLane];
  load(k, qkv + qkv_at(s, w.b, w.t, w.h, 1), s.HS, lane);
  load(v, qkv + qkv_at(s, w.b, w.t, w.h, 2), s.HS, lane);
#pragma unroll
  for (int j = 0; j < kPerLane; ++j) dk[j] = dv[j] = 0;
  const int64_t row0 = kr - w.t;  // the row of query 0 of this (b, h)
  for (int t = w.t; t < s.T; ++t) {
    const int64_t r = row0 + t;
    const T* q = qkv + qkv_at(s, w.b, t, w.h, 0);
    const T* d = dout + out_at(s, w.b, t, w.h);
    const float P = expf(dot(k, q, s.HS, lane) * s.scale - lse[r]);
    const float M = mask(s, p, seed, group, r, w.t);
    const float ds = P * (M * dot(v, d, s.HS, lane) - delta[r]) * s.scale;
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) {
      const int i = lane + j * kWarpSize;
      if (i < s.HS) {
        dv[j] += P * M * to_f32(d[i]);
        dk[j] += ds * to_f32(q[i]);
      }
    }
  }
  store(dqkv + qkv_at(s, w.b, w.t, w.h, 1), dk, 1.0f, s.HS, lane);
  store(dqkv + qkv_at(s, w.b, w.t, w.h, 2), dv, 1.0f, s.HS, lane);
}

Shape shape_of(const char* op, int B, int T, int C, int NH, float dropout_p) {
  CHECK(B > 0 && T > 0 && NH > 0 && C % NH == 0 && attention_any_head_supported(C, NH),
        "{} on the GPU: B {}, T {}, C {}, NH {}: needs C divisible by NH and heads of at most {}",
        op, B, T, C, NH, kMaxHeadSize);
  CHECK(dropout_p >= 0 && dropout_p < 1, "{} on the GPU: dropout {} outside [0, 1)", op, dropout_p);
  const int HS = C / NH;
  return Shape{B, T, NH, HS, 1.0f / std::sqrt(static_cast<float>(HS))};
}

unsigned blocks(const Shape& s) {
  return static_cast<unsigned>((s.rows() + kRowsPerBlock - 1) / kRowsPerBlock);
}

}  // namespace

bool attention_any_head_supported(int C, int NH) {
  return NH > 0 && C % NH == 0 && C / NH <= kMaxHeadSize;
}

void attention_any_head_forward(TypedPtr out, float* lse, ConstTypedPtr qkv, int B, int T, int C,
                                int NH, float dropout_p, uint64_t seed) {
  const Shape s = shape_of("attention_any_head_forward", B, T, C, NH, dropout_p);
  CHECK(out.dtype == qkv.dtype, "attention_any_head_forward on the GPU: out ({}) and qkv ({})",
        dtype_name(out.dtype), dtype_name(qkv.dtype));
  const int group = qkv.dtype == DType::kF32 ? 0 : attention_batch_group(B, NH);
  dispatch_dtype(qkv.dtype, "attention_any_head_forward", [&](auto t) {
    using Tx = decltype(t);
    forward_kernel<Tx><<<blocks(s), kThreads>>>(static_cast<Tx*>(out.data), lse,
                                                static_cast<const Tx*>(qkv.data), s, dropout_p,
                                                seed, group);
  });
  NANOGPT_CUDA_CHECK_LAUNCH();
}

void attention_any_head_backward(TypedPtr dqkv, float* delta, ConstTypedPtr dout, ConstTypedPtr out,
                                 const float* lse, ConstTypedPtr qkv, int B, int T, int C, int NH,
                                 float dropout_p, uint64_t seed) {
  const Shape s = shape_of("attention_any_head_backward", B, T, C, NH, dropout_p);
  CHECK(dqkv.dtype == qkv.dtype && dout.dtype == qkv.dtype && out.dtype == qkv.dtype,
        "attention_any_head_backward on the GPU: dqkv ({}), dout ({}), out ({}) and qkv ({}) must "
        "share one dtype",
        dtype_name(dqkv.dtype), dtype_name(dout.dtype), dtype_name(out.dtype),
        dtype_name(qkv.dtype));
  const int group = qkv.dtype == DType::kF32 ? 0 : attention_batch_group(B, NH);
  dispatch_dtype(qkv.dtype, "attention_any_head_backward", [&](auto t) {
    using Tx = decltype(t);
    const Tx* q = static_cast<const Tx*>(qkv.data);
    const Tx* d = static_cast<const Tx*>(dout.data);
    Tx* g = static_cast<Tx*>(dqkv.data);
    delta_kernel<Tx><<<blocks(s), kThreads>>>(delta, d, static_cast<const Tx*>(out.data), s);
    dq_kernel<Tx><<<blocks(s), kThreads>>>(g, d, lse, delta, q, s, dropout_p, seed, group);
    dkv_kernel<Tx><<<blocks(s), kThreads>>>(g, d, lse, delta, q, s, dropout_p, seed, group);
  });
  NANOGPT_CUDA_CHECK_LAUNCH();
}

}  // namespace nanogpt::cuda
